#!/usr/bin/env bash
# Core ops, Ignis against PyTorch on the CPU, side by side in one run at 1 and 2 threads.
# Prints the raw JSON lines, then a Markdown table (best of ROUNDS=3 rounds): row, threads, Ignis and PyTorch median
# times, the ratio PyTorch time / Ignis time (> 1 means Ignis is faster), Ignis's GB/s and
# that as % of a memcpy at the same thread count (the machine's practical bandwidth).
#
# PyTorch is set up at its best, as docs say (DESIGN.md, Measuring): Debian's python3-torch
# takes whatever libblas.so.3 the system selects, so the OpenMP OpenBLAS is put first on the
# library path, and jemalloc is preloaded and told to keep its memory. The script checks from
# inside the PyTorch process that the OpenMP OpenBLAS was really loaded (and its matmul row
# shows the GFLOP/s it reaches).
#
# Usage: bench/compare_core.sh [path/to/core_ops] [extra args for both, e.g. --only add]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
ignis_bin="${1:-build/bench/core_ops}"
shift || true

if [[ ! -x "$ignis_bin" ]]; then
  echo "compare_core.sh: no Ignis benchmark at $ignis_bin (build the core_ops target)" >&2
  exit 1
fi
# shellcheck source=torch_env.sh
source "$here/torch_env.sh"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# The machine may be shared: both engines run alternately in ROUNDS rounds and the table keeps
# each row's best median, so a burst of someone else's work hits one round, not the result.
for round in $(seq "${ROUNDS:-3}"); do
  for threads in 1 2; do
    # OMP_NUM_THREADS too, so neither side starts a larger pool than it will use.
    # Both on the same cores (pin_cpus, torch_env.sh).
    # shellcheck disable=SC2046  # pin_cpus prints words meant to split
    OMP_NUM_THREADS=$threads $(pin_cpus "$threads") "$ignis_bin" --threads "$threads" "$@" | tee -a "$out"
    # shellcheck disable=SC2046
    OMP_NUM_THREADS=$threads $(pin_cpus "$threads") "${torch_env[@]}" "$python" "$here/core_ops.py" --threads "$threads" "$@" |
      tee -a "$out"
  done
done
echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$python" - "$out" "$openblas_dir" <<'EOF'
import json, sys
rows, order, info = {}, [], []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "info" in r:
        info.append(r["info"])
        continue
    key = (r["op"], r["threads"])
    if key not in order:  # first appearance fixes the table order
        order.append(key)
    best = rows.setdefault(key, {}).get(r["engine"])
    if best is None or r.get("seconds", 1e9) < best.get("seconds", 1e9):
        rows[key][r["engine"]] = r
for i in info:
    if not any(sys.argv[2] in lib for lib in i["libs"]):
        print("\n**warning**: PyTorch did not load the OpenMP OpenBLAS (%s); loaded: %s"
              % (sys.argv[2], ", ".join(i["libs"]) or "none"))
        break
print("\n| row | threads | Ignis s | PyTorch s | PyTorch/Ignis | Ignis GB/s | % of memcpy | Ignis GFLOP/s |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for op, t in order:
    if op == "memcpy":
        continue
    e = rows[(op, t)]
    ig, pt = e.get("ignis", {}), e.get("torch", {})
    mc = rows.get(("memcpy", t), {}).get("ignis", {}).get("gbytes_per_s")
    fmt = lambda r, k, f: (f % r[k]) if k in r else "–"
    ratio = "%.2f" % (pt["seconds"] / ig["seconds"]) if "seconds" in ig and "seconds" in pt else "–"
    pct = "%.0f%%" % (100 * ig["gbytes_per_s"] / mc) if mc and "gbytes_per_s" in ig else "–"
    ig_s = fmt(ig, "seconds", "%.3g") if "error" not in ig else "(%s)" % ig["error"]
    print("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
        op, t, ig_s, fmt(pt, "seconds", "%.3g"), ratio, fmt(ig, "gbytes_per_s", "%.1f"), pct,
        fmt(ig, "gflops", "%.1f")))
for t in sorted({t for _, t in order}):
    m = rows.get(("memcpy", t), {}).get("ignis")
    if m:
        print("\nmemcpy of 64 MB at %d thread(s): %.1f GB/s (read + write)" % (t, m["gbytes_per_s"]), end="")
print()
EOF
