#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU, the CUDA toolkit, CMake, ninja and a
# Python whose PyTorch carries cuDNN/cuBLAS/NCCL in its nvidia/* packages (no network, no
# Debian packages), this configures and builds the CUDA backend for the local GPU in its own
# build directory (only the targets it runs), runs the tests labelled `cuda` and the CUDA
# error/allocator unit tests, the GPU benchmarks and a short compute-sanitizer memcheck, and
# writes the logs, a JUnit XML and a summary under OUTDIR.
#
#   scripts/gpu-check.sh OUTDIR
#
# Missing CPU-side libraries (fmt, GoogleTest, nlohmann-json, OpenBLAS, zlib headers) come
# from .gpu-deps/*.deb, made by scripts/gpu-deps.sh on a development machine, unpacked into
# a private prefix.
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: the script changes directory next
cd "$(dirname "$0")/.."
summary="$out/summary.md"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

say "# GPU check"
say "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
if command -v nvidia-smi >/dev/null; then
  say "- gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
else
  say "- gpu: none found (nvidia-smi missing)"
fi

# Private prefix with the carried Debian packages.
prefix=/tmp/ignis-deps
if ls .gpu-deps/*.deb >/dev/null 2>&1; then
  mkdir -p "$prefix"
  for d in .gpu-deps/*.deb; do dpkg-deb -x "$d" "$prefix"; done
fi
arch_dir=$(ls -d "$prefix"/usr/lib/*-linux-gnu 2>/dev/null | head -1)
export LD_LIBRARY_PATH="${arch_dir:+$arch_dir:$arch_dir/openblas-openmp:}${LD_LIBRARY_PATH:-}"

# cuDNN, cuBLAS and NCCL from PyTorch's wheels when the toolkit lacks them.
py=$(command -v python3)
# nvidia.* are namespace packages (no __init__.py, so no __file__): take __path__.
cudnn_root=$("$py" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
if [ -n "$cudnn_root" ]; then
  export LD_LIBRARY_PATH="$cudnn_root/lib:$LD_LIBRARY_PATH"
  [ -e "$cudnn_root/lib/libcudnn.so" ] || ln -sf "$(ls "$cudnn_root"/lib/libcudnn.so.* | head -1)" "$cudnn_root/lib/libcudnn.so" 2>/dev/null || true
fi

# cuBLASLt from the nvidia-cublas wheel, only when the toolkit has none (otherwise the
# toolkit's library, which the headers belong to, must be the one loaded).
cuda_home=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
cublas_root=
if ! ls "$cuda_home"/lib64/libcublasLt.so* "$cuda_home"/targets/*/lib/libcublasLt.so* >/dev/null 2>&1; then
  cublas_root=$("$py" -c 'import nvidia.cublas as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  say "- cuBLASLt: not in the toolkit; from ${cublas_root:-nowhere (configure will say so)}"
fi
if [ -n "$cublas_root" ]; then
  export LD_LIBRARY_PATH="$cublas_root/lib:$LD_LIBRARY_PATH"
  [ -e "$cublas_root/lib/libcublasLt.so" ] || ln -sf "$(ls "$cublas_root"/lib/libcublasLt.so.* | head -1)" "$cublas_root/lib/libcublasLt.so" 2>/dev/null || true
fi

# zlib: the carried headers, linked against the machine's own libz.so.1 (the carried
# libz.so is a symlink to a library version the machine may not have).
zlib_args=()
if [ ! -e /usr/include/zlib.h ] && [ -e "$prefix/usr/include/zlib.h" ]; then
  zlib_so=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 /{print $NF; exit}')
  zlib_args=(-DZLIB_INCLUDE_DIR="$prefix/usr/include" ${zlib_so:+-DZLIB_LIBRARY="$zlib_so"})
fi

# The GPU convolutions need cuDNN: with PyTorch's wheel and its headers found, a cuDNN that
# configure still cannot use is an error rather than a build whose convolution tests fail.
cudnn_mode=AUTO
[ -n "$cudnn_root" ] && [ -e "$cudnn_root/include/cudnn.h" ] && cudnn_mode=ON

build=build-gpu
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
say "- cuda arch: ${cap:-90}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIGNIS_CUDA=ON \
  -DIGNIS_CUDA_ARCHS="${cap:-90}" -DCMAKE_CUDA_ARCHITECTURES="${cap:-90}" \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DIGNIS_CUDNN="$cudnn_mode" -DIGNIS_CUDNN_ROOT="$cudnn_root" -DIGNIS_CUBLAS_ROOT="$cublas_root" \
  -DIGNIS_OPENBLAS_LIBRARY="$(ls "$arch_dir"/openblas-openmp/libopenblas.so* 2>/dev/null | head -1)" \
  -DIGNIS_OPENBLAS_INCLUDE_DIR="$(ls -d "$prefix"/usr/include/*/openblas-openmp 2>/dev/null | head -1)" \
  -DGTEST_ROOT="$prefix/usr" "${zlib_args[@]}" >"$out/configure.log" 2>&1
rc=$?
say "- configure: exit $rc (configure.log)"
say "- $(grep -o 'CUDA backend : .*' "$out/configure.log" | head -1)"
[ $rc -eq 0 ] || { tail -30 "$out/configure.log"; exit 1; }

start=$(date +%s)
cmake --build "$build" -j "$(nproc)" --target test_cuda test_core gpu_ops gpu_train gpu_loader \
  >"$out/build.log" 2>&1
rc=$?
say "- build: exit $rc in $(( $(date +%s) - start )) s (build.log)"
[ $rc -eq 0 ] || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }

# The `cuda` tests, plus the unit tests of the CUDA error paths and the caching policy (on a
# GPU machine CudaErrors checks the out-of-range device index instead of "no device").
ctest --test-dir "$build" -L cuda --output-on-failure --timeout 300 \
  --output-junit "$out/ctest-cuda.xml" >"$out/ctest-cuda.log" 2>&1
rc=$?
say "- cuda tests: exit $rc: $(grep -E 'tests passed|tests failed' "$out/ctest-cuda.log" | tail -1)"
grep -E "Skipped|\*\*\*Failed|Not Run|Exception" "$out/ctest-cuda.log" | head -30 | tee -a "$summary"
ctest --test-dir "$build" -L unit -R "CudaErrors|CachingAllocator" --output-on-failure \
  >"$out/ctest-unit.log" 2>&1
say "- cuda unit tests: exit $?: $(grep -E 'tests passed|tests failed' "$out/ctest-unit.log" | tail -1)"

# GPU benchmarks (each prints JSON lines); added as the CUDA backend grows.
for b in "$build"/bench/gpu_*; do
  [ -x "$b" ] || continue
  name=$(basename "$b")
  timeout 300 "$b" >"$out/$name.jsonl" 2>&1
  say "- bench $name: exit $? ($name.jsonl)"
done
# The same training rows in this machine's PyTorch, for the side-by-side comparison.
if "$py" -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null; then
  timeout 300 "$py" bench/gpu_train.py >"$out/gpu_train_torch.jsonl" 2>&1
  say "- bench gpu_train.py (PyTorch): exit $? (gpu_train_torch.jsonl)"
else
  say "- bench gpu_train.py (PyTorch): skipped (no torch/torchvision with CUDA)"
fi

# Out-of-bounds accesses and races that give right answers by luck: a few fast tests under
# compute-sanitizer's memcheck (slow: each kernel runs instrumented).
if command -v compute-sanitizer >/dev/null; then
  timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 "$build/tests/test_cuda" \
    --gtest_filter='CudaTransfer.*:CudaElementwise.InPlace*:CudaReduce.NonContiguous*:CudaLinalg.Softmax*:CudaLinalg.AddmmAnd*:CudaRandom.Views*:CudaIndex.OutOfBounds*:CudaData.BatchTransforms*:CudaData.StoppingMidEpoch*' \
    >"$out/sanitizer.log" 2>&1
  say "- compute-sanitizer memcheck: exit $? (sanitizer.log; 3 = errors found)"
  # The nn kernels' index arithmetic (pooling windows, channel views, loss rows).
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 "$build/tests/test_cuda" \
    --gtest_filter='CudaNn.Pooling*:CudaNn.BatchNorm*:CudaLoss.*:CudaOptim.*' \
    >"$out/sanitizer-nn.log" 2>&1
  say "- compute-sanitizer memcheck, nn kernels: exit $? (sanitizer-nn.log; 3 = errors found)"
fi
cat "$summary"
