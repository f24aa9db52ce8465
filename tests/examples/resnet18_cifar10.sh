#!/bin/sh
# examples/resnet18_cifar10 on a small CIFAR-10-format directory made here (random pixels and
# labels: data_batch_1..5.bin and test_batch.bin of 32 records each, batches.meta.txt): one
# epoch must finish, print the test metrics and the per-class report, and write a model file
# holding ResNet-18's keys that ignis::load (through `ignis eval --weights`, strict) reads
# back into a ResNet-18.
# Usage: resnet18_cifar10.sh EXAMPLE IGNIS WORK
set -eu
example=$1 bin=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 "$here/../cli/make_cifar10.py" cifar 32
"$example" cifar --epochs 1 --limit 160 --out model.safetensors >out.txt
cat out.txt
grep -Eq '^epoch 1  train loss [0-9.]+  val accuracy [0-9.]+ \((cpu|cuda)' out.txt
grep -Eq '^test accuracy [0-9.]+  macro precision [0-9.]+  macro recall [0-9.]+$' out.txt
for name in airplane truck 'macro avg' 'confusion matrix'; do
  grep -q "$name" out.txt || { echo "FAIL: report lacks '$name'"; exit 1; }
done
python3 - <<'PY'
import json, struct
raw = open("model.safetensors", "rb").read()
header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
keys = [k for k in header if k != "__metadata__"]
# torchvision's ResNet-18: 62 weights and biases, 3 buffers for each of its 20 batch norms.
assert len(keys) == 62 + 3 * 20, len(keys)
assert header["conv1.weight"]["shape"] == [64, 3, 3, 3], header["conv1.weight"]  # CIFAR stem
assert header["fc.weight"]["shape"] == [10, 512] and "layer4.1.bn2.running_var" in keys
print(f"ok: {len(keys)} ResNet-18 tensors")
PY
"$bin" eval --weights model.safetensors --model resnet18 --data cifar10 --data-dir cifar \
  --limit 160 >eval.txt
grep -q '^test set (32 samples): accuracy' eval.txt || { cat eval.txt; exit 1; }
echo "ok: ignis::load reads the model back into a ResNet-18"
