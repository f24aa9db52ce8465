#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU, the CUDA toolkit, CMake, ninja and a
# Python whose PyTorch carries cuDNN/cuBLAS/NCCL in its nvidia/* packages (no network, no
# Debian packages), this configures and builds the CUDA backend for the local GPU in its own
# build directory (only the targets it runs), runs the tests labelled `cuda` and the CUDA
# error/allocator unit tests, the trainer, the GPU benchmarks and the `cuda` tests under
# compute-sanitizer (memcheck, then racecheck). The steps after the build share a time budget
# (IGNIS_GPU_CHECK_SECONDS, default 480 s from the script's start), so the whole check stays
# within about 8 minutes: each step gets what is left, and a step the budget no longer allows
# is reported as skipped.
#
#   IGNIS_COMMIT=<hash> [IGNIS_GPU_CHECK_PARTS="tests bench sanitizer"] scripts/gpu-check.sh OUTDIR
#
# IGNIS_GPU_CHECK_PARTS picks what runs after the build (default: all three; "airbench", the
# CIFAR-10 speed recipe against its PyTorch twin, runs only when named). A build kept
# from a previous call on a machine still warm is reused, so a check can be split into calls
# of one part each (tests first: they are the evidence that matters most).
#
# A machine whose nvidia-smi lists no GPU stops before the build, and a build that finds no
# usable device (no driver, one older than the runtime) stops after `ignis devices`, both
# with exit 2 and the reason: every `cuda` test would skip itself. Without the carried
# .gpu-deps (and nothing unpacked by an earlier call) it stops at once with exit 1.
#
# OUTDIR receives three files, refreshed after every step (so a check cut short still leaves
# them): summary.md, ctest-cuda.xml (JUnit) and logs.tar.gz (every log and JSON line, without
# model weights). Everything else, run directories included, stays in a work folder
# (IGNIS_GPU_CHECK_WORK, default /tmp/ignis-gpu-check). IGNIS_COMMIT names the commit when the
# checkout there has no .git.
#
# Missing CPU-side libraries (fmt, GoogleTest, nlohmann-json, CLI11, OpenBLAS, libpng,
# libjpeg-turbo, zlib headers) come from .gpu-deps/*.deb, made by scripts/gpu-deps.sh on a
# development machine (git-ignored: the run must carry .gpu-deps), unpacked into a private
# prefix.
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: the script changes directory next
cd "$(dirname "$0")/.." || exit 1
work=${IGNIS_GPU_CHECK_WORK:-/tmp/ignis-gpu-check}
rm -rf "$work"
mkdir -p "$work"
summary="$out/summary.md"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
# The results that go back: the summary (written as we go), the JUnit XML and the logs.
# A part file per process: the background packer below and the steps never write one file.
pack() {
  [ -e "$work/ctest-cuda.xml" ] && cp "$work/ctest-cuda.xml" "$out/ctest-cuda.xml"
  local part="$out/logs.tar.gz.part.$BASHPID"
  tar -czf "$part" -C "$work" --exclude='*.safetensors' --exclude='*.ckpt' \
    --exclude='*.bin' --exclude='*.pt' . 2>/dev/null && mv "$part" "$out/logs.tar.gz"
  rm -f "$part"
}
# Every 20 s as well: a call killed at its limit (SIGKILL: no EXIT trap) still returns the
# logs of the step it was in, up to 20 s old.
(while sleep 20; do pack; done) &
packer=$!
trap 'kill $packer 2>/dev/null; pack' EXIT
trap 'exit 143' TERM INT  # the EXIT trap packs
# The first of the paths (a glob's matches) that exists, or nothing.
first() { for f in "$@"; do [ -e "$f" ] && { echo "$f"; return; }; done; }
started=$(date +%s)
budget=${IGNIS_GPU_CHECK_SECONDS:-480}
# Seconds left of the budget, less a reserve for writing the summary (never below 0).
left() {
  local l=$((budget - ($(date +%s) - started) - 15))
  echo $((l > 0 ? l : 0))
}
# The smaller of a step's own cap and what is left of the budget.
cap() { local l; l=$(left); echo $(($1 < l ? $1 : l)); }
# cap with a floor: `timeout 0` would mean no limit at all.
capmin() { local c; c=$(cap "$1"); echo $((c > $2 ? c : $2)); }
# Which parts run after the build: tests (cuda tests, unit tests, the trainer), bench (GPU
# benchmarks, PyTorch comparison), sanitizer (compute-sanitizer over the cuda tests), airbench
# (the CIFAR-10 speed recipe; needs the carried CIFAR-10 files).
parts=" ${IGNIS_GPU_CHECK_PARTS:-tests bench sanitizer} "
want() { [[ "$parts" == *" $1 "* ]]; }

say "# GPU check"
say "- commit: ${IGNIS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
say "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
if command -v nvidia-smi >/dev/null; then
  say "- gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  # No device the driver lists: every `cuda` test would skip itself. Stop before the build.
  if ! timeout 20 nvidia-smi -L 2>&1 | grep -q '^GPU '; then
    say "- NO USABLE GPU: nvidia-smi -L lists none ($(timeout 20 nvidia-smi -L 2>&1 | head -1)); stopping"
    exit 2
  fi
else
  say "- gpu: none found (nvidia-smi missing)"
fi
# The tools, so that a build failure can be read from the summary alone.
say "- tools: $(cmake --version 2>&1 | head -1); $(c++ --version 2>&1 | head -1); $(nvcc --version 2>&1 | grep -m1 release)"

# Private prefix with the carried Debian packages.
prefix=/tmp/ignis-deps
if ls .gpu-deps/*.deb >/dev/null 2>&1; then
  mkdir -p "$prefix"
  for d in .gpu-deps/*.deb; do dpkg-deb -x "$d" "$prefix"; done
elif [ ! -d "$prefix/usr" ]; then
  say "- deps: no .gpu-deps carried and none unpacked by an earlier call (a cold machine): configure would miss fmt, GoogleTest, ...; run scripts/gpu-deps.sh and carry .gpu-deps. Stopping"
  exit 1
fi
arch_dir=$(first "$prefix"/usr/lib/*-linux-gnu)
export LD_LIBRARY_PATH="${arch_dir:+$arch_dir:$arch_dir/openblas-openmp:}${LD_LIBRARY_PATH:-}"
# A few packages (libnl, which Open MPI's network plugins load) unpack into /lib, not /usr/lib.
root_arch_dir=$(first "$prefix"/lib/*-linux-gnu)
[ -n "$root_arch_dir" ] && export LD_LIBRARY_PATH="$root_arch_dir:$LD_LIBRARY_PATH"
# The carried Open MPI, when the machine has none: relocated with OPAL_PREFIX, its wrappers and
# mpirun under their plain names first in PATH, so that CMake's FindMPI (and with it the NCCL
# tests, which start through MPI) finds it. A wrapper that does not work there leaves MPI
# not found and the build without distributed support, as before.
if { ! command -v mpicxx >/dev/null || ! timeout 10 mpirun --version 2>/dev/null | grep -q 'Open MPI'; } &&
  [ -x "$prefix/usr/bin/mpicxx.openmpi" ]; then
  export OPAL_PREFIX="$prefix/usr"
  for tool in mpicxx mpicc mpirun mpiexec; do
    ln -sf "$tool.openmpi" "$prefix/usr/bin/$tool"
  done
  export PATH="$prefix/usr/bin:$PATH"
  [ -n "$arch_dir" ] && export LD_LIBRARY_PATH="$arch_dir/openmpi/lib:$LD_LIBRARY_PATH"
  # OPAL_PREFIX moves the libraries, not the settings file: Debian's (which turns UCX, OFI
  # and openib off) is named where it now is.
  conf="$prefix/etc/openmpi/openmpi-mca-params.conf"
  [ -e "$conf" ] && export OMPI_MCA_mca_base_param_files="$conf"
  say "- Open MPI: carried ($(timeout 10 mpirun --version 2>/dev/null | head -1))"
fi
# mpirun refuses to start, even for local ranks only, when it finds neither ssh nor rsh.
if command -v mpirun >/dev/null && ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then
  export OMPI_MCA_plm_rsh_agent=false
fi
# Debian keeps some headers in the multiarch folder (libjpeg's jconfig.h), which the compiler
# searches under /usr/include only.
arch_inc=$(first "$prefix"/usr/include/*-linux-gnu)
[ -n "$arch_inc" ] && export CPATH="$arch_inc${CPATH:+:$CPATH}"

# cuDNN, cuBLAS and NCCL from PyTorch's wheels when the toolkit lacks them.
py=$(command -v python3)
# The folder of a wheel's module (nothing when absent). nvidia.* are namespace packages (no
# __init__.py, so no __file__): take __path__.
wheel_root() { "$py" -c "import $1 as m; print(list(m.__path__)[0])" 2>/dev/null || true; }
cudnn_root=$(wheel_root nvidia.cudnn)
if [ -n "$cudnn_root" ]; then
  export LD_LIBRARY_PATH="$cudnn_root/lib:$LD_LIBRARY_PATH"
  [ -e "$cudnn_root/lib/libcudnn.so" ] || ln -sf "$(first "$cudnn_root"/lib/libcudnn.so.*)" "$cudnn_root/lib/libcudnn.so" 2>/dev/null || true
fi
# NCCL: the wheel's nvidia/nccl/{include,lib} (CMake is told with IGNIS_NCCL_ROOT).
nccl_root=$(wheel_root nvidia.nccl)
if [ -n "$nccl_root" ]; then
  export LD_LIBRARY_PATH="$nccl_root/lib:$LD_LIBRARY_PATH"
  [ -e "$nccl_root/lib/libnccl.so" ] || ln -sf "$(first "$nccl_root"/lib/libnccl.so.*)" "$nccl_root/lib/libnccl.so" 2>/dev/null || true
fi

# cuBLASLt from the nvidia-cublas wheel, only when the toolkit has none (otherwise the
# toolkit's library, which the headers belong to, must be the one loaded).
cuda_home=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")
cublas_root=
if [ -z "$(first "$cuda_home"/lib64/libcublasLt.so* "$cuda_home"/lib/libcublasLt.so* "$cuda_home"/targets/*/lib/libcublasLt.so*)" ]; then
  # CUDA 12 wheels: nvidia/cublas/{lib,include}; CUDA 13 wheels: nvidia/cu13/{lib,include}.
  for mod in nvidia.cublas nvidia.cu13; do
    root=$(wheel_root "$mod")
    if [ -n "$root" ] && ls "$root"/lib/libcublasLt.so* >/dev/null 2>&1; then
      cublas_root=$root
      break
    fi
  done
  say "- cuBLASLt: not in the toolkit; from ${cublas_root:-nowhere (configure will say so)}"
fi
if [ -n "$cublas_root" ]; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cublas_root/lib"
  [ -e "$cublas_root/lib/libcublasLt.so" ] || ln -sf "$(first "$cublas_root"/lib/libcublasLt.so.*)" "$cublas_root/lib/libcublasLt.so" 2>/dev/null || true
  # A root of its own for CMake: the wheel's library folder and only the cuBLAS headers (the
  # CUDA 13 wheel's include folder also holds the runtime's headers, which must not shadow
  # the toolkit's).
  only=/tmp/ignis-cublas
  rm -rf "$only" && mkdir -p "$only/include"
  ln -s "$cublas_root/lib" "$only/lib"
  for h in "$cublas_root"/include/cublas*.h; do [ -e "$h" ] && ln -s "$h" "$only/include/"; done
  cublas_root=$only
fi

# zlib: the carried headers, linked against the machine's own libz.so.1 (the carried
# libz.so is a symlink to a library version the machine may not have).
zlib_args=()
if [ ! -e /usr/include/zlib.h ] && [ -e "$prefix/usr/include/zlib.h" ]; then
  zlib_so=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 /{print $NF; exit}')
  zlib_so=${zlib_so:-$(first /lib/*-linux-gnu/libz.so.1 /usr/lib/*-linux-gnu/libz.so.1 /usr/lib64/libz.so.1)}
  zlib_args=(-DZLIB_INCLUDE_DIR="$prefix/usr/include" ${zlib_so:+-DZLIB_LIBRARY="$zlib_so"})
fi

# The GPU convolutions need cuDNN: with PyTorch's wheel and its headers found, a cuDNN that
# configure still cannot use is an error rather than a build whose convolution tests fail.
cudnn_mode=AUTO
[ -n "$cudnn_root" ] && [ -e "$cudnn_root/include/cudnn.h" ] && cudnn_mode=ON

build="build-gpu"
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
[[ $cap =~ ^[0-9]+$ ]] || cap=90  # nvidia-smi failing prints its error on stdout
say "- cuda arch: ${cap:-90}"
timeout -k 10 240 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIGNIS_CUDA=ON \
  -DIGNIS_CUDA_ARCHS="${cap:-90}" -DCMAKE_CUDA_ARCHITECTURES="${cap:-90}" \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DIGNIS_CUDNN="$cudnn_mode" -DIGNIS_CUDNN_ROOT="$cudnn_root" -DIGNIS_CUBLAS_ROOT="$cublas_root" \
  -DIGNIS_NCCL_ROOT="$nccl_root" \
  -DIGNIS_OPENBLAS_LIBRARY="$(first "$arch_dir"/openblas-openmp/libopenblas.so*)" \
  -DIGNIS_OPENBLAS_INCLUDE_DIR="$(first "$prefix"/usr/include/*/openblas-openmp)" \
  -DGTEST_ROOT="$prefix/usr" "${zlib_args[@]}" >"$work/configure.log" 2>&1
rc=$?
say "- configure: exit $rc (configure.log)"
say "- $(grep -o 'CUDA backend : .*' "$work/configure.log" | head -1)"
say "- $(grep -o 'MPI .*: .*' "$work/configure.log" | head -1)"
say "- $(grep -o 'NCCL .*: .*' "$work/configure.log" | head -1)"
[ $rc -eq 0 ] || { tail -30 "$work/configure.log"; exit 1; }

start=$(date +%s)
targets=(test_cuda test_core gpu_ops gpu_train gpu_loader ignis_cli)
# The NCCL test exists when MPI and NCCL were found; built, or ctest reports it "Not Run".
# (grep without -q: -q exits at the first match, and under pipefail ninja's SIGPIPE would
# fail the pipeline.)
ninja -C "$build" -t targets all 2>/dev/null | grep '^test_mpi_nccl:' >/dev/null && targets+=(test_mpi_nccl)
# The build takes what is left of the budget less 170 s (at most 420 s, at least 60), so that
# `ignis devices` and the tests' floors after it still end within ten minutes of the start.
# -k 0: a target that fails to compile (an optional benchmark) does not stop the others.
build_s=$(($(left) - 170))
build_s=$((build_s > 420 ? 420 : build_s < 60 ? 60 : build_s))
timeout -k 10 "$build_s" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" -- -k 0 \
  >"$work/build.log" 2>&1
rc=$?
say "- build: exit $rc in $(( $(date +%s) - start )) s of at most $build_s (build.log)"
if [ $rc -ne 0 ]; then
  grep -E "error|FAILED" "$work/build.log" | head -40 | tee -a "$summary"
  # What did build still runs; without the test binary or the program nothing does.
  for needed in tests/test_cuda apps/ignis/ignis; do
    [ -x "$build/$needed" ] || { say "- $needed was not built: stopping"; exit 1; }
  done
fi
pack

# `ignis devices`: the versions (driver, runtime, cuBLAS, cuDNN) for the records, and the
# proof that the device is usable. Without one every `cuda` test skips itself and ctest would
# report 100% passed: stop here with the runtime's reason instead.
timeout -k 5 30 "$build/apps/ignis/ignis" devices >"$work/devices.log" 2>&1
say "- ignis devices: exit $? (devices.log)"
grep -E '^(gpu|cuda)' "$work/devices.log" | head -4 | sed 's/^/  /' | tee -a "$summary"
if grep -q '^gpu .*no GPU' "$work/devices.log"; then
  say "- NO USABLE GPU: nothing below would run on a device; stopping"
  exit 2
fi
grep -q '^cuda:0 ' "$work/devices.log" || say "- ignis devices listed no cuda:0 (devices.log); going on"


if want tests; then
  # The `cuda` tests, plus the unit tests of the CUDA error paths and the caching policy (on a
  # GPU machine CudaErrors checks the out-of-range device index instead of "no device").
  # -j 4: each test is a process paying CUDA's context and library start-up (1-3 s); none
  # fills the GPU's memory (the out-of-memory test asks for twice the device at once).
  # Four threads each: four tests at once, their CPU reference halves not 64 threads on 16 cores.
  # The MPI-launched NCCL tests run after, on their own (a hang in mpirun or in NCCL's set-up
  # must not hold the main run's slots until its cap).
  OMP_NUM_THREADS=4 timeout -k 10 "$(capmin 300 90)" ctest --test-dir "$build" -L cuda -E '^mpi\.' -j 4 --output-on-failure --timeout 120 \
    --output-junit "$work/ctest-cuda.xml" >"$work/ctest-cuda.log" 2>&1
  rc=$?
  say "- cuda tests: exit $rc: $(grep -E 'tests passed|tests failed' "$work/ctest-cuda.log" | tail -1); $(grep -c '(Skipped)' "$work/ctest-cuda.log") skipped"
  grep -E "Skipped|\*\*\*Failed|Not Run|Exception" "$work/ctest-cuda.log" | head -30 | tee -a "$summary"
  pack  # the evidence that matters most, before anything that could run out the time
  if ctest --test-dir "$build" -N -L cuda -R '^mpi\.' 2>/dev/null | grep -q 'Test *#'; then
    timeout -k 10 "$(capmin 90 30)" ctest --test-dir "$build" -L cuda -R '^mpi\.' --timeout 60 \
      --output-on-failure >"$work/ctest-mpi.log" 2>&1
    say "- cuda mpi tests: exit $?: $(grep -E 'tests passed|tests failed' "$work/ctest-mpi.log" | tail -1) (ctest-mpi.log)"
    pack
  fi
  timeout -k 10 "$(capmin 120 30)" ctest --test-dir "$build" -L unit -R "CudaErrors|CachingAllocator|GraphCapture|CaptureStep" \
    --output-on-failure >"$work/ctest-unit.log" 2>&1
  say "- cuda unit tests: exit $?: $(grep -E 'tests passed|tests failed' "$work/ctest-unit.log" | tail -1)"
  pack

  # The trainer end to end on the GPU: ResNet-18 on synthetic images with the batch size found
  # by trial steps (--batch-size auto), bf16 autocast and the GPU-resident loader, one epoch,
  # then the test report, and its start-up (process start to the end of the first step, with
  # the batch-size trials). 262,144 images: at the tens of thousands the search picks on an
  # H200 the epoch still has several steps, so the CUDA-graph step is captured and replayed.
  # The run directory stays in the work folder (its log is packed).
  if [ "$(left)" -ge 60 ]; then
    timeout -k 10 "$(cap 120)" "$build/apps/ignis/ignis" train --data synthetic --limit 262144 \
      --model resnet18 --device cuda --epochs 1 --batch-size auto --amp bf16 --profile-startup \
      --out "$work/train-resnet18" >"$work/train-resnet18.log" 2>&1
    rc=$?
    say "- ignis train resnet18 on cuda (synthetic, --batch-size auto, --amp bf16): exit $rc ($(grep -m1 -iE '^batch|auto' "$work/train-resnet18.log" | cut -c1-100); train-resnet18.log)"
    say "  $(grep -m1 '^startup ' "$work/train-resnet18.log" || echo 'startup: no line')"
    pack
  else
    say "- ignis train on cuda: skipped (time budget spent)"
  fi
else
  say "- tests: not in IGNIS_GPU_CHECK_PARTS"
fi

if want bench; then
  # GPU benchmarks (each prints JSON lines); added as the CUDA backend grows. gpu_train runs
  # below, inside bench/compare.sh, next to PyTorch.
  for b in "$build"/bench/gpu_*; do
    [ -x "$b" ] || continue
    name=$(basename "$b")
    [ "$name" = gpu_train ] && continue
    # A third of what is left at most: the sanitizer runs come next.
    t=$(($(left) / 3 < 120 ? $(left) / 3 : 120))
    if [ "$t" -lt 10 ]; then
      say "- bench $name: skipped (time budget spent)"
      continue
    fi
    timeout -k 10 "$t" stdbuf -oL "$b" >"$work/$name.jsonl" 2>&1
    say "- bench $name: exit $? ($name.jsonl)"
    pack
  done
  # Ignis against this machine's PyTorch (eager, CUDA graphs, torch.compile when it finishes in
  # time), start-up and time to accuracy on Fashion-MNIST (carried by gpu-deps.sh), in at most
  # half of what is left (the sanitizer runs come next): bench/compare.sh's table of ratios.
  t=$(($(left) / 2 < 200 ? $(left) / 2 : 200))
  if ! "$py" -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null; then
    say "- bench compare.sh: skipped (no torch/torchvision with CUDA)"
  elif [ "$t" -lt 30 ]; then
    say "- bench compare.sh: skipped (time budget spent)"
  else
    fmnist=$(first "$prefix"/usr/share/datasets/fashion-mnist /usr/share/datasets/fashion-mnist)
    IGNIS_PYTHON=$py GPU_SECONDS=$t DATA_DIR=${fmnist:-none} timeout -k 10 "$((t + 20))" \
      bench/compare.sh --gpu --build "$build" --out "$work/compare" >"$work/compare.md" 2>&1
    say "- bench compare.sh --gpu: exit $? in at most $t s (compare.md, compare/)"
    pack
    grep '^|' "$work/compare.md" | tee -a "$summary"
    grep '^# ' "$work/compare.md" | grep -v '^# load' | sed 's/^# /  note: /' | tee -a "$summary"
  fi
else
  say "- bench: not in IGNIS_GPU_CHECK_PARTS"
fi

if want airbench; then
  # The CIFAR-10 speed recipe: `ignis train --preset airbench94` against its PyTorch twin on the
  # real CIFAR-10 files, RUNS runs each (bench/compare_airbench.sh). The files (184 MB) do not
  # fit one call's 64 MiB: scripts/gpu-cifar-parts.sh cuts them into three carried folders
  # that earlier calls copy to IGNIS_CIFAR_DIR (default /tmp/ignis-cifar), which survives
  # while the machine stays warm; docs/gpu-verification.md has the calls.
  cifar=${IGNIS_CIFAR_DIR:-/tmp/ignis-cifar}
  t=$(($(left) < 300 ? $(left) : 300))
  if [ ! -e "$cifar/test_batch.bin" ] || [ ! -e "$cifar/data_batch_5.bin" ] ||
    [ ! -e "$cifar/batches.meta.txt" ]; then
    say "- airbench94: skipped (no CIFAR-10 files, batches.meta.txt among them, in $cifar; carry them first)"
  elif ! "$py" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    say "- airbench94: skipped (no torch with CUDA for the PyTorch twin)"
  elif [ "$t" -lt 60 ]; then
    say "- airbench94: skipped (time budget spent)"
  else
    RUNS=${IGNIS_AIRBENCH_RUNS:-3} IGNIS_PYTHON=$py timeout -k 10 "$t" \
      bench/compare_airbench.sh "$cifar" --device cuda --build "$build" --out "$work/airbench" \
      >"$work/airbench.md" 2>"$work/airbench.log"
    say "- airbench94 (Ignis and the PyTorch twin on CIFAR-10): exit $? in at most $t s (airbench.md, airbench/)"
    pack
    grep -E '^\||^airbench' "$work/airbench.md" | tee -a "$summary"
    # Each finished Ignis run's own lines (ignis-N: the captured step; ignis-eager-N:
    # --cuda-graphs off), also when the comparison was cut short.
    grep -E 'test accuracy with TTA|TFLOP/s' "$work"/airbench/ignis-*.log 2>/dev/null |
      sed 's|^.*/||; s/^/  /' | tee -a "$summary"
  fi
fi

if want sanitizer; then
  # The `cuda` tests under compute-sanitizer: memcheck (out-of-bounds and misaligned device
  # accesses, failing CUDA calls, answers right by luck), then racecheck (shared-memory hazards:
  # the reduction and softmax kernels), each given half of what is left of the budget (a run
  # cut short says how far it got). A probe on one test first: when the tool is missing, or it
  # cannot attach here (a driver, container or runtime that refuses its debugger interface),
  # the step is skipped with the reason.
  sanitizer=$(command -v compute-sanitizer || true)
  if [ -z "$sanitizer" ] && [ -x "$cuda_home/bin/compute-sanitizer" ]; then
    sanitizer=$cuda_home/bin/compute-sanitizer
  fi
  test_cuda=$build/tests/test_cuda
  if [ -z "$sanitizer" ]; then
    say "- compute-sanitizer: skipped (not in PATH nor in $cuda_home/bin)"
  elif [ "$(left)" -lt 60 ]; then
    say "- compute-sanitizer: skipped (time budget spent: $(left) s left)"
  else
    timeout -k 5 60 "$sanitizer" --tool memcheck --error-exitcode 3 "$test_cuda" \
      --gtest_filter='CudaRuntime.DeviceQueriesAndProperties' >"$work/sanitizer-probe.log" 2>&1
    rc=$?
    refusal=$(grep -m1 -E '^========= (Error|Internal)' "$work/sanitizer-probe.log" | cut -c1-200)
    # Exit 3 without a refusal: the tool runs and found errors in the probe test itself.
    [ $rc -eq 3 ] && [ -z "$refusal" ] && say "- compute-sanitizer: ERRORS FOUND already in the probe test (sanitizer-probe.log)"
    if { [ $rc -ne 0 ] && [ $rc -ne 3 ]; } || [ -n "$refusal" ]; then
      say "- compute-sanitizer: skipped, it cannot run test_cuda here (probe exit $rc: ${refusal:-$(tail -n 1 "$work/sanitizer-probe.log" | cut -c1-200)}; sanitizer-probe.log)"
    else
      tools=(memcheck racecheck)
      for i in 0 1; do
        tool=${tools[$i]}
        log=$work/sanitizer-$tool.log
        t=$(($(left) / (2 - i)))
        if [ "$t" -lt 30 ]; then
          say "- compute-sanitizer $tool: skipped (time budget spent)"
          continue
        fi
        # Without the out-of-memory test: its cudaMalloc fails on purpose, which the tool
        # would count as an API error.
        timeout -k 10 "$t" "$sanitizer" --tool "$tool" --error-exitcode 3 "$test_cuda" \
          --gtest_filter='-CudaRuntime.OutOfMemory*' >"$log" 2>&1
        rc=$?
        passed=$(grep -c '^\[       OK \]' "$log")
        reports=$(grep -c -E '^========= +(Invalid|Program hit|Error|ERROR|Warning|Race)' "$log")
        errors=$(grep -m1 'ERROR SUMMARY' "$log" | sed 's/^========= *//')
        case $rc in
          0) verdict="clean, $passed tests passed (${errors:-no summary})" ;;
          3) verdict="ERRORS FOUND: ${errors:-see the log}" ;;
          124 | 137) verdict="stopped at its ${t} s limit after $passed tests passed, $reports reports until then" ;;
          *) verdict="exit $rc (tests failed under the tool), $passed passed, $reports reports" ;;
        esac
        say "- compute-sanitizer $tool: $verdict (sanitizer-$tool.log)"
        pack
      done
    fi
  fi
else
  say "- sanitizer: not in IGNIS_GPU_CHECK_PARTS"
fi
say "- total: $(($(date +%s) - started)) s of the ${budget} s budget"
cat "$summary"
