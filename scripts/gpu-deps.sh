#!/usr/bin/env bash
# Run on a development machine (Debian, network to its package mirror) before a GPU check:
# downloads the Debian packages whose headers and libraries the build needs but the GPU
# machine lacks (fmt, GoogleTest, nlohmann-json, CLI11, OpenBLAS, libpng, libjpeg-turbo, zlib
# headers: every REQUIRED dependency of cmake/IgnisDependencies.cmake, apps/ and tests/) into
# .gpu-deps/ (git-ignored, so a GPU run must carry it). gpu-check.sh unpacks them into a
# private prefix there; nothing is installed system-wide. Fashion-MNIST (31 MB) comes too, for
# the time-to-accuracy rows of bench/compare.sh, and Open MPI for the NCCL tests. About 52 MB
# in all (a run carries 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-deps
cd .gpu-deps
rm -f ./*.deb
# A stale package list can name a version the mirror has since replaced (a security update).
apt-get update -qq
# libquadmath0: libgfortran5 needs it to load OpenBLAS (present wherever a distro g++ is).
apt-get download libfmt-dev libfmt9 libgtest-dev nlohmann-json3-dev libcli11-dev \
  libopenblas-openmp-dev libopenblas0-openmp libopenblas-dev libgfortran5 libquadmath0 \
  zlib1g-dev libpng-dev libpng16-16 libjpeg62-turbo-dev libjpeg62-turbo \
  dataset-fashion-mnist 2>&1 | tail -n 3
# Open MPI (about 7 MB), so that the NCCL tests, which start through MPI, are built there;
# gpu-check.sh relocates it into its prefix with OPAL_PREFIX. libhwloc loads libudev, and
# the UCX and PSM2 plugins libnuma: a minimal image may have neither.
apt-get download openmpi-bin openmpi-common libopenmpi-dev libopenmpi3 libhwloc15 \
  libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 \
  libpsm-infinipath1 libpsm2-2 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 \
  libmunge2 libudev1 libnuma1 2>&1 | tail -n 3
ls -1 ./*.deb
