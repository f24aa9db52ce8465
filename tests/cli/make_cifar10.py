"""Writes a small CIFAR-10-format directory: data_batch_1..5.bin and test_batch.bin of
RECORDS records each (a label byte, then 3072 pixel bytes) and batches.meta.txt with the class
names (CIFAR-10's own, or those given, one per argument after the first two).
The pixels are random; with --learnable each class has its own colour (per-channel mean set by
the label) under the noise, so a model can learn the classes.
Usage: make_cifar10.py DIR RECORDS [--learnable] [NAME...]"""
import os
import random
import sys

args = [a for a in sys.argv[1:] if a != "--learnable"]
learnable = len(args) != len(sys.argv) - 1
out, records = args[0], int(args[1])
names = args[2:] or ["airplane", "automobile", "bird", "cat", "deer",
                     "dog", "frog", "horse", "ship", "truck"]
assert len(names) == 10, "CIFAR-10 has 10 classes"
os.makedirs(out, exist_ok=True)
random.seed(0)


def pixels(label):
    if not learnable:
        return random.randbytes(3072)
    # Channel means (20 + 22 l, 230 - 22 l, 128 + 12 (l % 5)) with +-40 of noise.
    means = (20 + 22 * label, 230 - 22 * label, 128 + 12 * (label % 5))
    return bytes(min(255, max(0, means[i // 1024] + random.randrange(-40, 41)))
                 for i in range(3072))


with open(os.path.join(out, "batches.meta.txt"), "w") as f:
    f.write("\n".join(names) + "\n\n")
for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        for _ in range(records):
            label = random.randrange(10)
            f.write(bytes([label]) + pixels(label))
