#!/usr/bin/env bash
# --profile-startup: one `startup {...}` line after the first training step and before the
# first epoch ends, whose phases are each >= 0 (they add up to its total by construction), whose CPU time is > 0,
# and whose total (from the process's start) lies within the wall time the shell measured
# around the whole run (it started the process earlier and saw it end later). Without the flag
# there is no such line.
# Usage: train_startup.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
args=(train --data synthetic --limit 1024 --epochs 1 --model cnn --batch-size 64)
before=$(date +%s.%N)
"$bin" "${args[@]}" --profile-startup --out run >out.txt
after=$(date +%s.%N)
cat out.txt
python3 - "$before" "$after" <<'PY'
import json, sys
lines = open("out.txt").read().splitlines()
startup = [i for i, l in enumerate(lines) if l.startswith("startup ")]
assert len(startup) == 1, "expected one startup line, got %d" % len(startup)
done = next(i for i, l in enumerate(lines) if l.startswith("epoch 1/1 done"))
assert startup[0] < done, "the startup line comes after the first step, before the epoch ends"
r = json.loads(lines[startup[0]][len("startup "):])
phases = {k: v for k, v in r.items() if k not in ("first_step_done_s", "cpu_s")}
assert list(phases) == ["launch_s", "device_s", "data_s", "model_s", "first_step_s"], r
assert all(v >= 0 for v in phases.values()), r
total = r["first_step_done_s"]
wall = float(sys.argv[2]) - float(sys.argv[1])
# The kernel's start time has one clock tick (10 ms) of resolution.
assert 0 < total <= wall + 0.02, (total, wall)
assert r["cpu_s"] > 0, r
print("ok: startup %.3f s of the run's %.3f s wall time: %s" % (total, wall, r))
PY
"$bin" "${args[@]}" --out run >plain.txt
if grep -q '^startup ' plain.txt; then
  echo "FAIL: a startup line without --profile-startup"
  exit 1
fi
echo "ok: no startup line without the flag"
