#!/usr/bin/env bash
# Installs what is missing, builds everything (the CUDA backend too when the toolkit is
# present) and runs every test. Tests that need a GPU report themselves skipped without one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/check-file-sizes.sh
cmake --preset default
cmake --build --preset default
ctest --preset default "$@"
