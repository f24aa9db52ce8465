#!/usr/bin/env bash
# Installs what is missing, builds Ignis and runs the main job. Until the trainer lands this
# is the forward pass of the 10 -> 512 -> 10 MLP (examples/mlp_forward.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default
cmake --build --preset default --target mlp_forward
./build/examples/mlp_forward
