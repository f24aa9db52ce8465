# Helpers for the CLI test scripts (sourced by bash scripts). Waiting is always on a condition
# (a file, a line of output, a process exit) with a bounded timeout, never a fixed sleep.

# Scripts run with `set -e`: say which command failed instead of exiting silently.
set -o errtrace
trap 'echo "FAIL: ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND (status $?)"' ERR

# wait_until SECONDS COMMAND...: polls COMMAND every 10 ms until it succeeds; fails after SECONDS.
wait_until() {
  local limit=$1
  shift
  local end=$(($(date +%s) + limit))
  until "$@"; do
    if [ "$(date +%s)" -ge "$end" ]; then
      echo "FAIL: timed out after ${limit}s waiting for: $*"
      return 1
    fi
    sleep 0.01
  done
}

# kill_at_second_checkpoint ARGS...: starts `$bin train ARGS` and SIGKILLs it while it writes
# its second checkpoint (the first is complete then); IGNIS_TEST_CHECKPOINT_PAUSE makes the
# writer wait before each rename. Needs $bin (the ignis binary) and a writable current dir.
kill_at_second_checkpoint() {
  IGNIS_TEST_CHECKPOINT_PAUSE=$PWD/pause "$bin" train "$@" >/dev/null &
  local pid=$!
  { wait_until 120 test -e pause; rm pause; }
  wait_until 120 test -e pause
  kill -KILL $pid
  wait $pid || true
  rm pause
}

# expect_error PATTERN COMMAND...: the command exits 2 with one stderr line
# "ignis: error: ..." matching PATTERN (grep -E) and no uncaught-exception text.
expect_error() {
  local pattern=$1 rc=0
  shift
  "$@" >expect_out.txt 2>expect_err.txt || rc=$?
  cat expect_err.txt
  [ "$rc" -eq 2 ] || { echo "FAIL: exit status $rc, expected 2: $*"; return 1; }
  [ "$(wc -l <expect_err.txt)" -eq 1 ] || { echo "FAIL: stderr is not one line"; return 1; }
  grep -q '^ignis: error: ' expect_err.txt || { echo "FAIL: no 'ignis: error:' prefix"; return 1; }
  grep -Eq -- "$pattern" expect_err.txt || { echo "FAIL: stderr lacks /$pattern/"; return 1; }
  if grep -Eq 'terminate called|what\(\)|Aborted' expect_err.txt expect_out.txt; then
    echo "FAIL: uncaught exception text"
    return 1
  fi
}

# same_metrics DIR_A DIR_B: the metrics.jsonl of two runs agree in every value except timings.
same_metrics() {
  python3 - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PY'
import json, sys
timing = {"epoch_time_s", "train_samples_per_s", "wall_time_s"}
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert len(a) == len(b), (len(a), len(b))
for x, y in zip(a, b):
    assert x.keys() == y.keys(), (x.keys(), y.keys())
    for k in x:
        assert k in timing or x[k] == y[k], (k, x[k], y[k])
print(f"ok: metrics.jsonl agree ({len(a)} records)")
PY
}

# dir_digest DIR: one checksum of every file's name and content (to show a directory unchanged).
dir_digest() { (cd "$1" && find . -type f | sort | xargs md5sum | md5sum); }
