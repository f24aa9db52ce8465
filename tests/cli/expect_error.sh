#!/bin/sh
# Runs `ignis ARGS...` in a fresh WORK directory and checks the bad-input contract: exit
# status 2, one line on stderr starting "ignis: error:" that contains PATTERN (grep -E), and
# no stack trace or uncaught-exception text.
# Usage: expect_error.sh IGNIS WORK PATTERN [ARGS...]
set -u
bin=$1 work=$2 pattern=$3
shift 3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
"$bin" "$@" >stdout.txt 2>stderr.txt
rc=$?
cat stderr.txt
[ "$rc" -eq 2 ] || { echo "FAIL: exit status $rc, expected 2"; exit 1; }
[ "$(wc -l <stderr.txt)" -eq 1 ] || { echo "FAIL: stderr is not one line"; exit 1; }
grep -q '^ignis: error: ' stderr.txt || { echo "FAIL: no 'ignis: error:' prefix"; exit 1; }
grep -Eq -- "$pattern" stderr.txt || { echo "FAIL: stderr lacks /$pattern/"; exit 1; }
if grep -Eq 'terminate called|what\(\)|Aborted' stderr.txt stdout.txt; then
  echo "FAIL: uncaught exception text"; exit 1
fi
echo "ok: exit 2 with /$pattern/"
