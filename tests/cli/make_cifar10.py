"""Writes a small CIFAR-10-format directory: data_batch_1..5.bin and test_batch.bin of
RECORDS records each (a label byte, then 3072 random pixel bytes) and batches.meta.txt with
the class names (CIFAR-10's own, or those given, one per argument after the first two).
Usage: make_cifar10.py DIR RECORDS [NAME...]"""
import os
import random
import sys

out, records = sys.argv[1], int(sys.argv[2])
names = sys.argv[3:] or ["airplane", "automobile", "bird", "cat", "deer",
                         "dog", "frog", "horse", "ship", "truck"]
assert len(names) == 10, "CIFAR-10 has 10 classes"
os.makedirs(out, exist_ok=True)
random.seed(0)
with open(os.path.join(out, "batches.meta.txt"), "w") as f:
    f.write("\n".join(names) + "\n\n")
for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        for _ in range(records):
            f.write(bytes([random.randrange(10)]) + random.randbytes(3072))
