#!/usr/bin/env bash
# Installs what is missing, builds Ignis and runs the main job: `ignis train` with its
# defaults (Fashion-MNIST split 70/10/20; the small CNN on a CPU, ~2.5 minutes on 2 cores,
# ResNet-18 on a GPU), which prints the evaluation and writes its run directory under runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default
cmake --build --preset default --target ignis_cli
./build/apps/ignis/ignis train "$@"
