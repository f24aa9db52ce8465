#!/usr/bin/env bash
# Model training and inference, Ignis against PyTorch on the CPU, side by side at 1 and 2
# threads. Every workload runs in its own process (so each row's peak_rss_mb, the process's
# VmHWM, is that workload's peak memory), Ignis and PyTorch alternately, in ROUNDS rounds
# (default 1: the ResNet rows take a while); the table keeps each row's best median.
# Prints the raw JSON lines, then a Markdown table: row, threads, Ignis and PyTorch
# throughput (steps/s for the MLP, samples/s otherwise), the ratio PyTorch time / Ignis time
# (> 1 means Ignis is faster), Ignis's GFLOP/s and its share of the practical peak (the best
# matmul 1024^3 rate either engine reaches at that thread count), and both peak memories.
# PyTorch runs at its best (torch_env.sh: the OpenMP OpenBLAS and jemalloc).
#
# Usage: bench/compare_train.sh [path/to/train_models] [extra args for both, e.g.
#        --resnet-steps 2]; ROWS="mlp small_cnn" limits the workloads, THREADS="2" the
#        thread counts (default "1 2").
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
ignis_bin="${1:-build/bench/train_models}"
shift || true
if [[ ! -x "$ignis_bin" ]]; then
  echo "compare_train.sh: no Ignis benchmark at $ignis_bin (build the train_models target)" >&2
  exit 1
fi
# shellcheck source=torch_env.sh
source "$here/torch_env.sh"
rows="${ROWS:-gemm mlp small_cnn resnet18_b32 resnet18_b128 resnet18_b128_bf16 resnet18_b128_bf16_cl resnet18_infer}"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "${ROUNDS:-1}"); do
  for threads in ${THREADS:-1 2}; do
    for row in $rows; do
      # shellcheck disable=SC2046  # pin_cpus prints words meant to split
      OMP_NUM_THREADS=$threads $(pin_cpus "$threads") "$ignis_bin" --threads "$threads" \
        --only "$row" "$@" | tee -a "$out"
      # shellcheck disable=SC2046
      OMP_NUM_THREADS=$threads $(pin_cpus "$threads") "${torch_env[@]}" "$python" "$here/train_models.py" \
        --threads "$threads" --only "$row" "$@" | tee -a "$out"
    done
  done
done
echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$python" - "$out" "$openblas_dir" <<'PY'
import json, sys
rows, order, info = {}, [], []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "info" in r:
        info.append(r["info"])
        continue
    key = (r["row"], r["threads"])
    if key not in order:
        order.append(key)
    best = rows.setdefault(key, {}).get(r["engine"])
    if best is None or r["seconds"] < best["seconds"]:
        rows[key][r["engine"]] = r
for i in info:
    if not any(sys.argv[2] in lib for lib in i["libs"]):
        print("\n**warning**: PyTorch did not load the OpenMP OpenBLAS; loaded: %s"
              % (", ".join(i["libs"]) or "none"))
        break
if info:
    print("\nPyTorch %s" % info[0]["version"])
peak = {}
for (row, t), e in rows.items():
    if row == "gemm":
        peak[t] = max(r["gflops"] for r in e.values())
print("\n| row | threads | Ignis /s | PyTorch /s | PyTorch/Ignis | Ignis GFLOP/s | % of peak "
      "| PyTorch GFLOP/s | Ignis peak MB | PyTorch peak MB |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for row, t in order:
    if row == "gemm":
        continue
    e = rows[(row, t)]
    ig, pt = e.get("ignis"), e.get("torch")
    unit = "steps_per_s" if row == "mlp" else "samples_per_s"
    f = lambda r, k, fmt: fmt % r[k] if r else "–"
    ratio = "%.2f" % (pt["seconds"] / ig["seconds"]) if ig and pt else "–"
    pct = "%.0f%%" % (100 * ig["gflops"] / peak[t]) if ig and t in peak else "–"
    print("| %s%s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        row, " (steps/s)" if row == "mlp" else "", t, f(ig, unit, "%.4g"), f(pt, unit, "%.4g"),
        ratio, f(ig, "gflops", "%.1f"), pct, f(pt, "gflops", "%.1f"),
        f(ig, "peak_rss_mb", "%.0f"), f(pt, "peak_rss_mb", "%.0f")))
for t in sorted(peak):
    g = rows[("gemm", t)]
    print("\npractical peak at %d thread(s): %.1f GFLOP/s (best matmul 1024^3: %s)" % (
        t, peak[t], ", ".join("%s %.1f" % (k, v["gflops"]) for k, v in sorted(g.items()))), end="")
print()
PY
