#!/usr/bin/env bash
# Run on a development machine (Debian, network to its package mirror) before a GPU check:
# downloads the Debian packages whose headers and libraries the build needs but the GPU
# machine lacks (fmt, GoogleTest, nlohmann-json, OpenBLAS, zlib headers) into .gpu-deps/ (git-ignored). gpu-check.sh
# unpacks them into a private prefix there; nothing is installed system-wide. Fashion-MNIST
# (31 MB) comes too, for the time-to-accuracy rows of bench/compare.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-deps
cd .gpu-deps
rm -f ./*.deb
apt-get download libfmt-dev libfmt9 libgtest-dev nlohmann-json3-dev libopenblas-openmp-dev libopenblas0-openmp \
  zlib1g-dev \
  libopenblas-dev libgfortran5 dataset-fashion-mnist 2>&1 | tail -n 3
ls -1 ./*.deb
