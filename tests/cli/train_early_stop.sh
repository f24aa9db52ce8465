#!/usr/bin/env bash
# --early-stop N: the run stops after the first epoch E that is N epochs past the best
# validation accuracy so far, where E is computed here from an uninterrupted run's
# metrics.jsonl; its epochs match that run's first E; and the weights it saves and tests are
# the best epoch's, compared byte for byte with the weights a third run had after that epoch
# (its checkpoint, captured by stopping it while it writes the next one).
# Usage: train_early_stop.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

flags=(--data synthetic --limit 1024 --epochs 8 --model mlp --batch-size 64)
"$bin" train "${flags[@]}" --out full >/dev/null
"$bin" train "${flags[@]}" --early-stop 2 --out early >early.txt
read -r stop best < <(python3 - <<'PY'
import json
full = [json.loads(l) for l in open("full/metrics.jsonl")]
early = [json.loads(l) for l in open("early/metrics.jsonl")]
accs = [r["val_accuracy"] for r in full if r["type"] == "epoch"]
best_acc, best, stop = -1, 0, None
for e, a in enumerate(accs, 1):
    if a > best_acc:
        best_acc, best = a, e
    if e - best >= 2:
        stop = e
        break
assert stop is not None and stop < len(accs), f"no early stop before the last epoch: {accs}"
epochs = [r for r in early if r["type"] == "epoch"]
assert [r["val_accuracy"] for r in epochs] == accs[:stop], (epochs, accs)
test = early[-1]
assert test["type"] == "test" and test["best_epoch"] == best and test["epochs_run"] == stop, test
print(stop, best)
PY
)
echo "expected: stop after epoch $stop, best epoch $best"
grep -q "early stop: no better validation accuracy for 2 epochs (best epoch $best)" early.txt
# The weights after epoch $best: stop a third run while it writes checkpoint $best + 1.
IGNIS_TEST_CHECKPOINT_PAUSE=$PWD/pause "$bin" train "${flags[@]}" --out probe >/dev/null &
pid=$!
for _ in $(seq 1 "$best"); do { wait_until 120 test -e pause; rm pause; }; done
wait_until 120 test -e pause
kill -KILL $pid
wait $pid 2>/dev/null || true
[ "$(python3 "$tool" state probe/checkpoint.safetensors)" = "$best 0" ]
python3 "$tool" same early/model.safetensors probe/checkpoint.safetensors model/
echo "ok: early stop at the computed epoch, saving the best epoch's weights"
