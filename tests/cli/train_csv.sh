#!/bin/sh
# `ignis train --data csv:PATH` on a generated file: three well-separated clusters in four
# features, labels given as class names in the last column; the model defaults to the MLP
# and must reach high test accuracy. Then a ragged row must stop the run with exit 2 and a
# message naming the file and the line.
# Usage: train_csv.sh IGNIS WORK
set -eu
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 - <<'PY'
import random
rng = random.Random(1)
centres = {"setosa": (0, 0, 0, 0), "versicolor": (5, 5, 0, 0), "virginica": (0, 5, 5, 5)}
with open("flowers.csv", "w") as f:
    f.write("a,b,c,d,species\n")
    for i in range(300):
        name = rng.choice(sorted(centres))
        f.write(",".join("%.3f" % (c + rng.gauss(0, 0.7)) for c in centres[name]) + "," + name + "\n")
PY
"$bin" train --data csv:flowers.csv --epochs 4 --out run >out.txt
cat out.txt
grep -q 'model   mlp' out.txt
python3 - <<'PY'
import json
cfg = json.load(open("run/config.json"))
assert cfg["classes"] == ["setosa", "versicolor", "virginica"], cfg["classes"]
assert cfg["model"] == "mlp" and len(cfg["mean"]) == 4, cfg
test = [json.loads(l) for l in open("run/metrics.jsonl")][-1]
assert test["type"] == "test" and test["test_accuracy"] >= 0.9, test
print("ok: 3 classes, test accuracy %.3f" % test["test_accuracy"])
PY
printf 'a,b,label\n1,2,x\n3,y\n' > ragged.csv
set +e
"$bin" train --data csv:ragged.csv --out run2 2>err.txt
rc=$?
set -e
cat err.txt
[ "$rc" -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q 'ragged.csv: line 3: expected 3 columns, found 2' err.txt
echo "ok: the ragged row is named"
