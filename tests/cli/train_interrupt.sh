#!/usr/bin/env bash
# SIGINT and SIGTERM to the real binary, sent once it prints its first progress line (the
# middle of epoch 1): it finishes the step, writes the checkpoint, prints one line saying how
# to resume and exits 130 (SIGINT) or 143 (SIGTERM); --resume then ends with the weights and
# metrics of an uninterrupted run, byte for byte.
# Usage: train_interrupt.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

# 4,300 training samples in batches of 32: 135 steps per epoch, a progress line every 27.
# The small CNN, not the MLP, and epochs this long: the signal goes when the script sees the
# first progress line, and the rest of the epoch (108 steps, most of a second) must outlast
# the script's polling on a loaded machine, or the signal lands after the epoch instead of
# in it (34-step epochs left 0.15 s after the line).
flags=(--data synthetic --limit 6144 --batch-size 32 --epochs 2 --model cnn)
"$bin" train "${flags[@]}" --out full >/dev/null

for sig in INT TERM; do
  run=run-$sig
  "$bin" train "${flags[@]}" --out $run >out-$sig.txt 2>err-$sig.txt &
  pid=$!
  wait_until 120 grep -q 'step 27/135' out-$sig.txt
  kill -$sig $pid
  rc=0
  wait $pid || rc=$?
  cat err-$sig.txt
  expected=$([ $sig = INT ] && echo 130 || echo 143)
  [ "$rc" -eq "$expected" ] || { echo "FAIL: SIG$sig: exit status $rc, expected $expected"; exit 1; }
  [ "$(wc -l <err-$sig.txt)" -eq 1 ] || { echo "FAIL: stderr is not one line"; exit 1; }
  grep -q "interrupted (SIG$sig) at epoch 1 step [0-9]*/135; checkpoint saved, continue with: ignis train --resume $run" err-$sig.txt
  read -r epoch step < <(python3 "$tool" state $run/checkpoint.safetensors)
  echo "checkpoint at epoch $epoch step $step"
  [ "$epoch" -eq 0 ] && [ "$step" -ge 27 ] && [ "$step" -lt 135 ]
  "$bin" train --resume $run >resume-$sig.txt
  grep -q "^resume  at epoch 1 step $step/135$" resume-$sig.txt
  python3 "$tool" same full/model.safetensors $run/model.safetensors
  same_metrics full $run
done
echo "ok: SIGINT/SIGTERM checkpoint, exit 130/143, resume to identical weights"
