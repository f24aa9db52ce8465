#!/usr/bin/env bash
# Crash safety: a small run (checkpoint every 3 steps and after each epoch) is SIGKILLed 18
# times and resumed each time, then runs to the end (a run that ends between kills is checked
# the same way and a new one started). Every third kill lands while a checkpoint is being
# written (IGNIS_TEST_CHECKPOINT_PAUSE holds the writer between writing the new file and
# renaming it; 0-2 checkpoints are let through first, so the run progresses); the others after
# a random delay within half the uninterrupted run's duration (seeded, so a failure repeats; the
# delay only picks *when* to kill). After every kill: config.json and metrics.jsonl parse, the
# checkpoint parses and never moves backwards, and the next resume starts exactly from it
# (ignis verifies its checksum). Every run that ends has the uninterrupted run's
# model.safetensors, byte for byte, and its metrics.
# Usage: train_crash.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"
RANDOM=20261130

# 537 training samples in batches of 32: 17 steps per epoch.
flags=(--data synthetic --limit 768 --epochs 3 --model mlp --batch-size 32)
t0=$(date +%s%N)
"$bin" train "${flags[@]}" --out full >/dev/null
run_ms=$((($(date +%s%N) - t0) / 1000000))
echo "uninterrupted run: ${run_ms} ms"

position() {  # the checkpoint's "epoch step", or "-1 0" without one
  if [ -e run/checkpoint.safetensors ]; then python3 "$tool" state run/checkpoint.safetensors; else echo "-1 0"; fi
}
start() {  # starts the run (fresh, or resumed when a checkpoint exists) in the background
  rm -f out.txt err.txt  # a kill before the redirections must not leave the last cycle's
  if [ -e run/checkpoint.safetensors ]; then
    "$bin" train --resume run --checkpoint-every 3 >out.txt 2>err.txt &
  else
    "$bin" train "${flags[@]}" --checkpoint-every 3 --out run >out.txt 2>err.txt &
  fi
  pid=$!
}
running() { [ -r /proc/$pid/stat ] && [ "$(cut -d' ' -f3 /proc/$pid/stat)" != Z ]; }
paused_or_done() { [ -e pause ] || ! running; }
check_resume_line() {  # the resume line (when printed before the kill) names the checkpoint
  local epoch=$1 step=$2
  grep -q '^resume' out.txt || return 0
  if [ "$step" -eq 0 ]; then
    grep -q "^resume  after epoch $epoch$" out.txt
  else
    grep -q "^resume  at epoch $((epoch + 1)) step $step/17$" out.txt
  fi
}
finished() {  # the run ended by itself: check it, then start another from scratch
  wait $pid
  python3 "$tool" same full/model.safetensors run/model.safetensors
  same_metrics full run
  completions=$((completions + 1))
  rm -rf run
}

# Kills land anywhere in a run: random delays span the uninterrupted run's time. On a fast
# machine a run can end between kills; it is then checked and another one started, until
# 18 kills have been made.
prev="-1 0" kills=0 completions=0 cycle=0
while [ $kills -lt 18 ]; do
  cycle=$((cycle + 1))
  [ $cycle -le 60 ] || { echo "FAIL: 60 cycles without 18 kills"; exit 1; }
  read -r epoch step < <(position)
  rm -f pause
  if [ $((cycle % 3)) -eq 0 ]; then
    export IGNIS_TEST_CHECKPOINT_PAUSE=$PWD/pause
    start
    for _ in $(seq 1 $((RANDOM % 3))); do
      wait_until 120 paused_or_done
      rm -f pause
    done
    wait_until 120 paused_or_done
    how="during a checkpoint write"
  else
    unset IGNIS_TEST_CHECKPOINT_PAUSE
    start
    delay=$((RANDOM * 32768 + RANDOM))
    delay=$((delay % (run_ms > 600 ? run_ms / 2 : 300)))
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    how="after ${delay} ms"
  fi
  # The run may end between the check and the kill (bash then reaps it and kill finds no
  # process): both mean it finished by itself.
  if ! running || ! kill -KILL $pid 2>/dev/null; then
    check_resume_line "$epoch" "$step"
    finished
    echo "cycle $cycle: the run finished before the kill; checked, starting over"
    prev="-1 0"
    continue
  fi
  wait $pid 2>/dev/null || true
  kills=$((kills + 1))
  check_resume_line "$epoch" "$step"
  if grep -q 'ignis: error' err.txt; then cat err.txt; echo "FAIL: cycle $cycle"; exit 1; fi
  now=$(position)
  echo "cycle $cycle: killed $how; checkpoint at epoch/step $now"
  python3 - "$prev" "$now" <<'PY'
import json, os, sys
prev, now = (tuple(map(int, s.split())) for s in sys.argv[1:3])
assert now >= prev, f"checkpoint moved backwards: {prev} -> {now}"
if os.path.exists("run/config.json"):
    json.load(open("run/config.json"))
if os.path.exists("run/metrics.jsonl"):
    [json.loads(l) for l in open("run/metrics.jsonl")]
PY
  prev=$now
done
unset IGNIS_TEST_CHECKPOINT_PAUSE
read -r epoch step < <(position)
start
check_resume_line "$epoch" "$step"
finished
echo "ok: $kills SIGKILLs, never a damaged checkpoint; $completions run(s) ended with the uninterrupted run's weights"
