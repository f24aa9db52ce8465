#!/bin/sh
# Cuts the CIFAR-10 binary files into three folders small enough for one GPU-machine call
# each (a call carries at most 64 MiB of the checkout): .gpu-data/cifar-1 (data_batch_1, 2),
# cifar-2 (data_batch_3, 4) and cifar-3 (data_batch_5, test_batch, batches.meta.txt), about
# 61 MB apiece. .gpu-data is git-ignored; each call carries one folder and copies it to the
# machine's /tmp/ignis-cifar (docs/gpu-verification.md lists the calls).
# Usage: scripts/gpu-cifar-parts.sh CIFAR_DIR   (the cifar-10-batches-bin folder)
set -eu
src=${1:?usage: scripts/gpu-cifar-parts.sh CIFAR_DIR}
src=$(cd "$src" && pwd) || { echo "gpu-cifar-parts.sh: no directory $1" >&2; exit 1; }
cd "$(dirname "$0")/.."
for f in data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin \
  test_batch.bin batches.meta.txt; do
  [ -e "$src/$f" ] || { echo "gpu-cifar-parts.sh: $src/$f is missing" >&2; exit 1; }
done
rm -rf .gpu-data
mkdir -p .gpu-data/cifar-1 .gpu-data/cifar-2 .gpu-data/cifar-3
cp "$src/data_batch_1.bin" "$src/data_batch_2.bin" .gpu-data/cifar-1/
cp "$src/data_batch_3.bin" "$src/data_batch_4.bin" .gpu-data/cifar-2/
cp "$src/data_batch_5.bin" "$src/test_batch.bin" .gpu-data/cifar-3/
cp "$src/batches.meta.txt" .gpu-data/cifar-3/  # the class names: the reader requires it
du -sh .gpu-data/*
