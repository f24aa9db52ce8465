# Sourced by the compare_*.sh scripts: sets `python` and the array `torch_env` (an `env`
# command line) that runs PyTorch at its best, as DESIGN.md (Measuring) prescribes. Debian's
# python3-torch takes whatever libblas.so.3 the system selects, so the OpenMP OpenBLAS is put
# first on the library path, and jemalloc is preloaded and told to keep its memory. Where that
# OpenBLAS does not know the CPU and picks kernels with narrower vectors than the CPU has
# (Note [Choosing the sgemm library], src/cpu/sgemm_library.cpp), OPENBLAS_CORETYPE gives
# PyTorch the right ones (IGNIS_TORCH_CORETYPE=default leaves OpenBLAS's own choice).
# On a CPU with AVX-512, ATEN_CPU_CAPABILITY=avx512 gives PyTorch its AVX-512 kernels, which
# Debian's build carries but does not pick by default (it reports "CPU capability usage:
# AVX2"); IGNIS_TORCH_CAPABILITY=default leaves its own choice.
# Also sets `openblas_dir`, which the scripts check the PyTorch process really loaded, and
# defines pin_cpus (below).
python="${IGNIS_PYTHON:-/usr/bin/python3}"
arch_lib=/usr/lib/x86_64-linux-gnu
openblas_dir="$arch_lib/openblas-openmp"
jemalloc="$arch_lib/libjemalloc.so.2"
torch_env=(env "LD_LIBRARY_PATH=$openblas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
if [[ -e "$jemalloc" ]]; then
  torch_env+=("LD_PRELOAD=$jemalloc" "MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1,thp:always")
else
  echo "warning: $jemalloc missing (apt install libjemalloc2); PyTorch runs without it" >&2
fi

# OpenBLAS's kernel set as it loads in this process, and the one the CPU's vectors call for.
openblas_core="$("$python" -c 'import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode().lower())' "$openblas_dir/libblas.so.3" 2>/dev/null ||
  echo unknown)"
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
wanted_core=""
case "$cpu_flags" in
  *" avx512f "*) [[ "$openblas_core" =~ ^(skylakex|cooperlake|sapphirerapids)$ ]] || wanted_core=SkylakeX ;;
  *" avx2 "*" fma "* | *" fma "*" avx2 "*) [[ "$openblas_core" =~ ^(haswell|zen|skylakex|cooperlake|sapphirerapids)$ ]] || wanted_core=Haswell ;;
esac
if [[ -n "$wanted_core" && "${IGNIS_TORCH_CORETYPE:-}" != default ]]; then
  torch_env+=("OPENBLAS_CORETYPE=${IGNIS_TORCH_CORETYPE:-$wanted_core}")
  echo "# PyTorch's OpenBLAS picked $openblas_core kernels on this CPU; it runs with" \
    "OPENBLAS_CORETYPE=${IGNIS_TORCH_CORETYPE:-$wanted_core}" >&2
fi
if [[ "$cpu_flags" == *" avx512f "* && "${IGNIS_TORCH_CAPABILITY:-}" != default ]]; then
  torch_env+=("ATEN_CPU_CAPABILITY=${IGNIS_TORCH_CAPABILITY:-avx512}")
  echo "# PyTorch runs with ATEN_CPU_CAPABILITY=${IGNIS_TORCH_CAPABILITY:-avx512}" >&2
fi

# pin_cpus N prints the command prefix (taskset -c 0-(N-1)) that keeps a run of N threads on
# the first N CPUs, so that both engines of a comparison run on the same cores: a virtual
# machine's vCPUs can differ in speed (on one 2-vCPU machine the second ran a memory-bound
# kernel 1.5x slower than the first), and an unpinned process lands on either. Prints
# nothing when N covers every CPU, when taskset is missing, or with IGNIS_BENCH_PIN=0.
pin_cpus() {
  local n=$1
  if [[ "${IGNIS_BENCH_PIN:-1}" != 0 ]] && command -v taskset >/dev/null &&
    ((n < $(nproc))); then
    echo "taskset -c 0-$((n - 1))"
  fi
}
