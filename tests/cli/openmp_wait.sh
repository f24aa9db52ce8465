#!/bin/sh
# `ignis` runs GNU OpenMP's waiting threads with a short spin unless the user chose one (Note
# [OpenMP waiting on a shared machine], apps/ignis/openmp_wait.cpp). Checked against what the
# runtime itself reports having read when it was loaded (OMP_DISPLAY_ENV=verbose, on stderr,
# once per load): with neither variable set, the program is loaded twice and the second load
# reads GOMP_SPINCOUNT=3000; with the user's GOMP_SPINCOUNT or OMP_WAIT_POLICY, it is loaded
# once and reads the user's value.
# Usage: openmp_wait.sh IGNIS
set -eu
bin=$1

# run_devices VAR=VALUE...: `ignis devices` with the given variables and neither of the two
# otherwise; sets $display (the runtime's stderr) and $devices (stdout).
run_devices() {
  display=$(env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose "$@" \
    "$bin" devices 2>&1 >/dev/null)
  devices=$(env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$@" "$bin" devices)
}
# Loads of GNU's runtime: its display has one GOMP_SPINCOUNT line (LLVM's libomp, which the
# sanitizer builds load beside it, prints its own block without one).
loads() { echo "$display" | grep -c "^  GOMP_SPINCOUNT = " || true; }
last_spin() { echo "$display" | sed -n "s/^  GOMP_SPINCOUNT = '\(.*\)'$/\1/p" | tail -n 1; }

run_devices
if ! echo "$display" | grep -q "^  GOMP_SPINCOUNT = "; then
  echo "ok: the OpenMP runtime is not GNU's (no GOMP_SPINCOUNT in its display): nothing to set"
  exit 0
fi
[ "$(loads)" = 2 ] || { echo "FAIL: expected 2 loads of the runtime, saw $(loads)"; exit 1; }
[ "$(last_spin)" = 3000 ] ||
  { echo "FAIL: the runtime read GOMP_SPINCOUNT '$(last_spin)'"; exit 1; }
echo "$devices" | grep -qxF "        waiting threads: GOMP_SPINCOUNT=3000" ||
  { echo "FAIL: 'ignis devices' does not report GOMP_SPINCOUNT=3000"; exit 1; }

run_devices GOMP_SPINCOUNT=123456
[ "$(loads)" = 1 ] || { echo "FAIL: the user's GOMP_SPINCOUNT: $(loads) loads"; exit 1; }
[ "$(last_spin)" = 123456 ] ||
  { echo "FAIL: the user's GOMP_SPINCOUNT became '$(last_spin)'"; exit 1; }
echo "$devices" | grep -qxF "        waiting threads: GOMP_SPINCOUNT=123456" ||
  { echo "FAIL: 'ignis devices' does not report the user's GOMP_SPINCOUNT"; exit 1; }

run_devices OMP_WAIT_POLICY=passive
[ "$(loads)" = 1 ] || { echo "FAIL: the user's OMP_WAIT_POLICY: $(loads) loads"; exit 1; }
[ "$(last_spin)" = 0 ] || { echo "FAIL: passive waiting spins '$(last_spin)' times"; exit 1; }
echo "$devices" | grep -qxF "        waiting threads: OMP_WAIT_POLICY=passive" ||
  { echo "FAIL: 'ignis devices' does not report the user's OMP_WAIT_POLICY"; exit 1; }
echo "ok: GOMP_SPINCOUNT 3000 by default; the user's GOMP_SPINCOUNT and OMP_WAIT_POLICY kept"
