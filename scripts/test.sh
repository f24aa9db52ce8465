#!/usr/bin/env bash
# Installs what is missing, builds everything (the CUDA backend too when the toolkit is
# present) and runs every test, then the unit tests under ASan + UBSan and the fuzzers. Tests
# that need a GPU report themselves skipped without one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/check-file-sizes.sh
cmake --preset default
cmake --build --preset default
ctest --preset default "$@"

# The same unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, then every parser's
# fuzzer for IGNIS_FUZZ_SECONDS each (docs/reliability.md). One clang build serves both.
# IGNIS_SKIP_SANITIZERS=1 leaves them out (a quicker local run).
if [ "${IGNIS_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake --preset asan
  cmake --build --preset asan
  ctest --preset asan
  IGNIS_FUZZ_PRESET=asan scripts/fuzz.sh "${IGNIS_FUZZ_SECONDS:-20}"
fi
