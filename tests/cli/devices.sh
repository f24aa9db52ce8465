#!/bin/sh
# `ignis devices` against the machine's own description: the CPU line must carry the first
# "model name" of /proc/cpuinfo, the thread count its number of "processor" entries; the GPU
# part either says "no GPU" (in a CUDA build, with the runtime's reason) or lists each
# device, with the names nvidia-smi reports when it is installed.
# Usage: devices.sh IGNIS
set -eu
bin=$1
out=$("$bin" devices)
echo "$out"
model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')
threads=$(grep -c '^processor' /proc/cpuinfo)
echo "$out" | grep -qxF "cpu     $model" || { echo "FAIL: cpu line is not '$model'"; exit 1; }
echo "$out" | grep -q "^        $threads hardware threads," ||
  { echo "FAIL: expected $threads hardware threads"; exit 1; }
echo "$out" | grep -Eq "^        matrix products: (OpenBLAS \(.+ kernels\)|float32: oneDNN sgemm)" ||
  { echo "FAIL: no 'matrix products:' line naming OpenBLAS or oneDNN"; exit 1; }
if echo "$out" | grep -q '^gpu     no GPU'; then
  # A CUDA build without a device names the runtime's reason (no driver, driver too old, ...).
  if echo "$out" | grep -q '^gpu     no GPU: built with CUDA'; then
    echo "$out" | grep -q '^gpu     no GPU: built with CUDA, but .*no CUDA device is available: ..' ||
      { echo "FAIL: a CUDA build without a device must say why"; exit 1; }
  fi
  echo "ok: cpu '$model', $threads threads, no GPU"
  exit 0
fi
echo "$out" | grep -q '^cuda    driver [0-9]' || { echo "FAIL: no driver line"; exit 1; }
echo "$out" | grep -q '^cuda:0  ' || { echo "FAIL: no cuda:0 line"; exit 1; }
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name --format=csv,noheader | while IFS= read -r name; do
    echo "$out" | grep -qF "  $name:" || { echo "FAIL: GPU '$name' not listed"; exit 1; }
  done
fi
echo "ok: cpu '$model', $threads threads, GPUs listed"
