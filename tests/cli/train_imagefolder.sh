#!/bin/sh
# `ignis train --data imagefolder:PATH` on a generated folder: two classes of PNGs of mixed
# sizes (dark and bright images, easy to tell apart; make_imagefolder.py), so the run
# must reach high test accuracy; then a corrupt image must stop the run with exit 2 and a
# message naming the file.
# Usage: train_imagefolder.sh IGNIS WORK
set -eu
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 "$here/make_imagefolder.py" images
"$bin" train --data imagefolder:images --image-size 16 --model mlp --epochs 3 --out run >out.txt
cat out.txt
grep -q 'imagefolder:images: 2 classes, 3x16x16 images' out.txt
python3 - <<'PY'
import json
cfg = json.load(open("run/config.json"))
assert cfg["classes"] == ["bright", "dark"], cfg["classes"]
assert cfg["train_size"] + cfg["val_size"] + cfg["test_size"] == 120, cfg
test = [json.loads(l) for l in open("run/metrics.jsonl")][-1]
assert test["type"] == "test" and test["test_accuracy"] >= 0.9, test
print("ok: 2 classes, test accuracy %.3f" % test["test_accuracy"])
PY
# The run's config.json keeps --image-size: --config repeats the run, ignis eval --run
# rebuilds the same 16x16 data (an MLP's input size depends on it).
"$bin" train --config run/config.json --out again >/dev/null
cmp run/model.safetensors again/model.safetensors
"$bin" eval --run run >eval.txt
grep -q 'accuracy' eval.txt
# A corrupt image: exit 2, one line naming the file.
printf 'not a png' > images/dark/broken.png
set +e
"$bin" train --data imagefolder:images --model mlp --epochs 1 --out run2 2>err.txt
rc=$?
set -e
cat err.txt
[ "$rc" -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q 'images/dark/broken.png: expected a PNG' err.txt
echo "ok: the corrupt image is named"
