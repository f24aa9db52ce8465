#!/bin/sh
# `ignis train --preset airbench94` end to end on a small learnable CIFAR-format set: the
# recipe must learn the classes, print its epoch table and the timed TTA score, and leave
# config.json, metrics.jsonl and a model.safetensors with the twin's keys, which `ignis eval`
# can score again.
# Usage: train_airbench.sh IGNIS WORK
set -eu
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 "$here/make_cifar10.py" cifar 300 --learnable
"$bin" train --preset airbench94 --data-dir cifar --device cpu --batch-size 100 --epochs 3 \
  --cuda-graphs auto \
  --out run >out.txt
cat out.txt
grep -q 'test accuracy with TTA' out.txt
python3 - <<'PY'
import json, struct
cfg = json.load(open("run/config.json"))
assert cfg["preset"] == "airbench94" and cfg["model"] == "airbench", cfg
assert cfg["batch_size"] == 100 and cfg["epochs"] == 3 and cfg["amp"] == "off", cfg
assert cfg["train_samples"] == 1500 and cfg["test_samples"] == 300, cfg
lines = [json.loads(l) for l in open("run/metrics.jsonl")]
assert [l["type"] for l in lines] == ["epoch"] * 3 + ["final"], lines
final = lines[-1]
# Timed seconds grow epoch by epoch and the final time includes the TTA evaluation.
seconds = [l["seconds"] for l in lines[:-1]]
assert seconds == sorted(seconds) and final["time_s"] >= seconds[-1] > 0, lines
# Colour-coded classes: the recipe must learn them (chance is 0.1).
assert final["tta_test_accuracy"] >= 0.9, final
raw = open("run/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
assert header["__metadata__"]["preset"] == "airbench94", header["__metadata__"]
keys = set(header) - {"__metadata__"}
assert "whiten.weight" in keys and "head.weight" in keys and len(keys) == 39, sorted(keys)
assert header["block3.norm2.num_batches_tracked"]["dtype"] == "I64", header
# The FLOP count, from the saved weights' shapes: multiply-adds per image of every conv at its
# output side (31; 31 -> pool -> 15; 15 -> 7; 7 -> 3) and the head, times 2 x 3 per trained
# image (forward, and the two gradients of the backward pass).
shape = lambda k: header[k]["shape"]
macs = 31 * 31 * shape("whiten.weight")[0] * 3 * 4
for block, (n1, n2) in zip(("block1", "block2", "block3"), ((31, 15), (15, 7), (7, 3))):
    o, i, kh, kw = shape(block + ".conv1.weight")
    macs += n1 * n1 * o * i * kh * kw
    o, i, kh, kw = shape(block + ".conv2.weight")
    macs += n2 * n2 * o * i * kh * kw
macs += shape("head.weight")[0] * shape("head.weight")[1]
assert final["samples_trained"] == 3 * 15 * 100, final
assert abs(final["train_flops"] - 6 * macs * 4500) <= 1e-9 * final["train_flops"], (final, macs)
assert final["train_tflop_per_s"] > 0 and final["train_seconds"] <= final["time_s"], final
assert final["cuda_graph"] is False, final  # a CPU run has no graph to replay
print("ok: learned to", final["tta_test_accuracy"], "in", final["time_s"], "s;",
      final["train_tflop_per_s"], "TFLOP/s over", macs, "MACs per image")
PY
# `ignis eval --run` rebuilds the preset's model and test set (no TTA there): the model file
# and the recorded normalisation must give the same learned classes.
"$bin" eval --run run --device cpu >eval.txt
cat eval.txt
python3 - <<'PY'
import re
text = open("eval.txt").read()
m = re.search(r"test set \((\d+) samples\): accuracy ([0-9.]+)%", text)
assert m and int(m.group(1)) == 300 and float(m.group(2)) >= 90, text
print("ok: eval --run scores the preset's model at", m.group(2), "%")
PY
# `ignis predict` takes the run too (model, classes and normalisation from its config.json).
python3 "$here/make_imagefolder.py" images 1
"$bin" predict run images --top-k 2 --device cpu >predict.txt
cat predict.txt
grep -q 'airbench' predict.txt && grep -Eq 'images/bright/000.png +1 ' predict.txt
echo "ok: predict reads the preset's run"
# A preset run's config.json replays it (--config), and a fraction of an epoch stops the last
# epoch part-way: 15 steps an epoch, 1.5 epochs = 23 steps, so two epoch records.
"$bin" train --config run/config.json --epochs 1.5 --out run2 >out2.txt
cat out2.txt
python3 - <<'PY'
import json
cfg = json.load(open("run2/config.json"))
assert cfg["preset"] == "airbench94" and cfg["epochs"] == 1.5 and cfg["batch_size"] == 100, cfg
lines = [json.loads(l) for l in open("run2/metrics.jsonl")]
assert [l["type"] for l in lines] == ["epoch", "epoch", "final"], lines
print("ok: config replay with 1.5 epochs")
PY
