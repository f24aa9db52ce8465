#!/usr/bin/env bash
# --on-nonfinite: an absurd constant learning rate (1e20) makes an MLP's loss overflow within
# a few steps. stop (the default): exit 2, one line naming the epoch and step (the same step
# as the synchronous check of --detect-anomaly, and no checkpoint written); with
# --detect-anomaly the line also names the first parameter in registration order (the first
# tensor of a healthy run's model.safetensors, whose keys follow registration order), since a
# NaN loss makes every gradient NaN. skip: the run finishes, metrics.jsonl counts the skipped
# steps, and the saved weights are all finite (a skipped step never touches them).
# Usage: train_nonfinite.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

flags=(--data synthetic --limit 256 --epochs 2 --model mlp --schedule constant)
"$bin" train "${flags[@]}" --out healthy >/dev/null
first=$(python3 "$tool" keys healthy/model.safetensors | sed -n 1p)
expect_error 'non-finite (loss|gradient) at epoch 1 step [0-9]+; lower --lr, or pass --on-nonfinite skip' \
  "$bin" train "${flags[@]}" --lr 1e20 --out stop
stop_at=$(grep -Eo 'non-finite (loss|gradient) at epoch [0-9]+ step [0-9]+' expect_err.txt)
# No progress line shows the bad step's loss: the check settles before the sums are read.
if grep -Eiq 'loss -?(nan|inf)' expect_out.txt; then
  echo "FAIL: a progress line printed a non-finite loss before the stop"; exit 1
fi
expect_error "non-finite (loss|gradient) at epoch 1 step [0-9]+ \\(first non-finite gradient: $first\\)" \
  "$bin" train "${flags[@]}" --lr 1e20 --detect-anomaly --out anomaly
anomaly_at=$(grep -Eo 'non-finite (loss|gradient) at epoch [0-9]+ step [0-9]+' expect_err.txt)
# The default run reads each step's verdict one step late (Note [Late finiteness checks]);
# --detect-anomaly reads it before the optimizer step. Both name the same first step, and
# the late one saved nothing in between.
[ "$stop_at" = "$anomaly_at" ] || { echo "FAIL: '$stop_at' against '$anomaly_at'"; exit 1; }
[ ! -e stop/checkpoint.safetensors ] || { echo "FAIL: a checkpoint after a non-finite step"; exit 1; }
"$bin" train "${flags[@]}" --lr 1e20 --on-nonfinite skip --out skip >skip.txt
grep -q 'non-finite steps skipped' skip.txt
python3 "$tool" finite skip/model.safetensors
python3 - <<'PY'
import json
recs = [json.loads(l) for l in open("skip/metrics.jsonl")]
skipped = [r["skipped_steps"] for r in recs if r["type"] == "epoch"]
assert len(skipped) == 2 and sum(skipped) > 0 and recs[-1]["type"] == "test", recs
print(f"ok: skipped steps per epoch {skipped}")
PY
