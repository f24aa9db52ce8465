#!/usr/bin/env bash
# Installs what Ignis needs from Debian's packages, and nothing when all of it is there.
# Safe to run again and again. Run as root (or with sudo available).
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ ccache pkg-config
  # libraries
  libopenblas-openmp-dev libdnnl-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev nlohmann-json3-dev
  libcli11-dev libfmt-dev
  # distributed training on the CPU (MPI collectives, mpirun)
  libopenmpi-dev openmpi-bin
  # tests and benchmarks
  libgtest-dev libbenchmark-dev python3-torch python3-torchvision python3-numpy libjemalloc2
  # the report.html browser test (headless)
  chromium
  # sanitizer and fuzz builds (presets asan, tsan, fuzz): clang with libFuzzer and OpenMP
  clang-14 libclang-rt-14-dev libomp-14-dev
  # real data (Fashion-MNIST under /usr/share/datasets/fashion-mnist)
  dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
