# Sourced by the compare_*.sh scripts: sets `python` and the array `torch_env` (an `env`
# command line) that runs PyTorch at its best, as DESIGN.md (Measuring) prescribes. Debian's
# python3-torch takes whatever libblas.so.3 the system selects, so the OpenMP OpenBLAS is put
# first on the library path, and jemalloc is preloaded and told to keep its memory.
# Also sets `openblas_dir`, which the scripts check the PyTorch process really loaded.
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
