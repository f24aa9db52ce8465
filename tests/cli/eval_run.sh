#!/bin/sh
# `ignis eval` against the run it evaluates: a short synthetic run, then
#   - eval --run DIR must print exactly the test numbers the run recorded in metrics.jsonl
#     (accuracy, top-5, loss, and every confusion-matrix entry);
#   - eval --run DIR --part val must give the best epoch's validation accuracy;
#   - eval --weights FILE (model and data from the file's metadata, default split) must print
#     the same test tables as eval --run;
#   - weights that do not fit the model named must fail with one line and exit 2.
# Usage: eval_run.sh IGNIS WORK EXPECT_ERROR
set -eu
bin=$1 work=$2 expect_error=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$bin" train --data synthetic --limit 512 --epochs 3 --model mlp --out run >train.txt
"$bin" eval --run run >eval.txt
cat eval.txt
"$bin" eval --run run --part val >eval_val.txt
"$bin" eval --weights run/model.safetensors --limit 512 >eval_weights.txt
python3 - <<'PY'
import json, re
records = [json.loads(l) for l in open("run/metrics.jsonl")]
test = records[-1]
out = open("eval.txt").read()
m = re.search(r"test set \((\d+) samples\): accuracy ([\d.]+)%  top-5 ([\d.]+)%  loss ([\d.]+)", out)
assert m, "no summary line"
assert int(m.group(1)) == test["test_samples"], (m.group(1), test["test_samples"])
assert m.group(2) == f"{100 * test['test_accuracy']:.2f}", (m.group(2), test["test_accuracy"])
assert m.group(3) == f"{100 * test['test_top5_accuracy']:.2f}", m.group(3)
assert m.group(4) == f"{test['test_loss']:.4f}", (m.group(4), test["test_loss"])
# The printed confusion matrix, row by row, against the recorded one.
rows = re.findall(r"^ *(\d+) class\d+ +((?: +\d+)+)$", out.split("confusion matrix")[1], re.M)
printed = [[int(v) for v in r[1].split()] for r in rows]
assert printed == test["confusion"], (printed, test["confusion"])
correct = sum(printed[i][i] for i in range(len(printed)))
assert correct / test["test_samples"] == test["test_accuracy"], correct
best = [r for r in records if r["type"] == "epoch" and r["epoch"] == test["best_epoch"]][0]
val = re.search(r"val set \((\d+) samples\): accuracy ([\d.]+)%", open("eval_val.txt").read())
assert val and val.group(2) == f"{100 * best['val_accuracy']:.2f}", (val and val.group(2), best)
tables = lambda text: text[text.index("test set"):]
assert tables(open("eval_weights.txt").read()) == tables(out), "eval --weights differs"
print(f"ok: eval reproduces accuracy {test['test_accuracy']}, {correct} correct, "
      f"val accuracy {best['val_accuracy']}")
PY
"$expect_error" "$bin" "$PWD/mismatch" "do not fit model 'cnn'" \
  eval --weights "$PWD/run/model.safetensors" --model cnn --data synthetic
