#!/usr/bin/env bash
# The data loader, Ignis against PyTorch on the CPU, side by side: bench/data_loader (Ignis)
# and bench/data_loader.py (PyTorch's DataLoader, batched and per-sample) on the same work
# (CIFAR-shaped uint8 batches of 128: to float, normalise, random crop with padding 4,
# horizontal flip) at 0, 1 and 2 workers, alternately for ROUNDS rounds (default 5).
# Prints the raw JSON lines, then a Markdown table of each row's median images/s over the
# rounds (with the range), and the ratio of Ignis to PyTorch at each one's best worker count.
# PyTorch runs with the environment of torch_env.sh (OpenMP OpenBLAS, jemalloc).
#
# Usage: bench/compare_data_loader.sh [path/to/data_loader] [--images N] [--epochs E]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
ignis_bin="${1:-build/bench/data_loader}"
shift || true
if [[ ! -x "$ignis_bin" ]]; then
  echo "compare_data_loader.sh: no Ignis benchmark at $ignis_bin (build the data_loader target)" >&2
  exit 1
fi
# shellcheck source=torch_env.sh
source "$here/torch_env.sh"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "${ROUNDS:-5}"); do
  OMP_NUM_THREADS=1 "$ignis_bin" "$@" | tee -a "$out"
  OMP_NUM_THREADS=1 "${torch_env[@]}" "$python" "$here/data_loader.py" "$@" | tee -a "$out"
done
echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$python" - "$out" <<'EOF_PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    name = r["engine"] + ("" if r["engine"] == "ignis" else " " + r["variant"])
    rows.setdefault((name, r["workers"]), []).append(r["images_per_s"])
print("\n| loader | workers | median images/s | range | rounds |")
print("| --- | ---: | ---: | ---: | ---: |")
best = {}
for (name, w), v in sorted(rows.items()):
    m = statistics.median(v)
    print("| %s | %d | %.0f | %.0f–%.0f | %d |" % (name, w, m, min(v), max(v), len(v)))
    if m > best.get(name, (0, 0))[0]:
        best[name] = (m, w)
print()
ig = best.get("ignis")
for name, (m, w) in sorted(best.items()):
    print("best %s: %.0f images/s at %d workers" % (name, m, w))
for name, (m, w) in sorted(best.items()):
    if name != "ignis" and ig:
        print("Ignis / %s: %.2fx" % (name, ig[0] / m))
EOF_PY
