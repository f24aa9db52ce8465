#!/usr/bin/env bash
# The airbench94 recipe in both engines, side by side: `ignis train --preset airbench94` and
# its PyTorch twin bench/airbench_torch.py, on the same CIFAR-10 files, device, batch size,
# epochs and number of runs, each timed by the recipe's rules (the whitening set-up, the
# training epochs and the final test-time-augmented evaluation; warm-up and per-epoch
# evaluations left out). Prints one markdown table: mean TTA test accuracy and mean timed
# seconds of each engine, and PyTorch's time / Ignis's (> 1: Ignis is faster).
#
# Usage: bench/compare_airbench.sh DATA_DIR [--device cpu|cuda] [--build DIR] [--out DIR]
# Env: RUNS (3 on a GPU, 1 on the CPU), EPOCHS (the recipe's 9.9 on a GPU; 2 on the CPU),
#   BATCH (1024 on a GPU; 256 on the CPU), LIMIT (first N training and test images; 0 = all
#   on a GPU, 4096 on the CPU), THREADS (CPU threads of both engines, default 2), EAGER_RUNS
#   (Ignis runs with --cuda-graphs off as well, their own row: what the captured step gains;
#   default 1 on a GPU, 0 on the CPU, where no step is captured).
# A full-length run on the CPU takes hours; the CPU defaults measure the same code on a slice.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=torch_env.sh
source "$here/torch_env.sh"
data=${1:?usage: compare_airbench.sh DATA_DIR [--device cpu|cuda] [--build DIR] [--out DIR]}
shift
device=cpu build=build out=""
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=${2:?--device needs cpu or cuda}; shift ;;
    --build) build=${2:?--build needs a directory}; shift ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    *) echo "compare_airbench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
ignis="$build/apps/ignis/ignis"
[ -x "$ignis" ] || { echo "compare_airbench.sh: no ignis binary at $ignis" >&2; exit 1; }
[ -e "$data/test_batch.bin" ] || { echo "compare_airbench.sh: no CIFAR-10 files in $data" >&2; exit 1; }
out=${out:-$(mktemp -d)}
mkdir -p "$out" && out=$(cd "$out" && pwd)
if [ "$device" = cpu ]; then
  runs=${RUNS:-1} epochs=${EPOCHS:-2} batch=${BATCH:-256} limit=${LIMIT:-4096}
else
  runs=${RUNS:-3} epochs=${EPOCHS:-} batch=${BATCH:-1024} limit=${LIMIT:-0}
fi
eager_runs=${EAGER_RUNS:-$([ "$device" = cuda ] && echo 1 || echo 0)}
threads=${THREADS:-2}
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg); logs in $out" >&2

# ignis_run NAME SEED [FLAG...]: one preset run into $out/NAME.
ignis_run() {
  local name=$1 seed=$2
  shift 2
  local args=(--preset airbench94 --data-dir "$data" --device "$device" --batch-size "$batch"
              --seed "$seed" --out "$out/$name" "$@")
  [ -n "$epochs" ] && args+=(--epochs "$epochs")
  [ "$limit" -gt 0 ] && args+=(--limit "$limit")
  OMP_NUM_THREADS=$threads "$ignis" train "${args[@]}" >"$out/$name.log" 2>&1 ||
    { echo "ignis run $name failed:" >&2; tail -5 "$out/$name.log" >&2; exit 1; }
}
for run in $(seq 0 $((runs - 1))); do ignis_run "ignis-$run" "$run"; done
for run in $(seq 0 $((eager_runs - 1))); do ignis_run "ignis-eager-$run" "$run" --cuda-graphs off; done

twin=(--data-dir "$data" --device "$device" --batch-size "$batch" --runs "$runs" --threads "$threads")
[ -n "$epochs" ] && twin+=(--epochs "$epochs")
[ "$limit" -gt 0 ] && twin+=(--limit-train "$limit" --limit-test "$((limit < 10000 ? limit : 10000))")
"${torch_env[@]}" "$python" "$here/airbench_torch.py" "${twin[@]}" >"$out/torch.jsonl" 2>"$out/torch.log" ||
  { echo "the PyTorch twin failed:" >&2; tail -5 "$out/torch.log" >&2; exit 1; }

"$python" - "$out" "$runs" "$device" "$epochs" "$batch" "$limit" "$eager_runs" <<'PY'
import json, statistics, sys
out, runs, device, epochs, batch, limit, eager_runs = sys.argv[1:]
def finals(prefix, n):
    rows = []
    for r in range(int(n)):
        lines = [json.loads(l) for l in open(f"{out}/{prefix}-{r}/metrics.jsonl")]
        final = [l for l in lines if l.get("type") == "final"][0]
        rows.append((final["tta_test_accuracy"], final["time_s"], final["train_tflop_per_s"],
                     final.get("cuda_graph", False)))
    return rows
ours = finals("ignis", runs)
eager = finals("ignis-eager", eager_runs)
theirs = [json.loads(l) for l in open(f"{out}/torch.jsonl")]
theirs = [(l["tta_test_accuracy"], l["time_s"]) for l in theirs if "tta_test_accuracy" in l]
mean = lambda xs, i: statistics.mean(x[i] for x in xs)
print(f"airbench94 on {device}: {runs} run(s) per engine, batch {batch}, "
      f"epochs {epochs or 9.9}, {'all' if limit == '0' else limit} training images")
print()
print("| engine | mean TTA test accuracy | mean timed seconds | PyTorch / Ignis |")
print("|---|---|---|---|")
graphs = " (step in a CUDA graph)" if all(r[3] for r in ours) else ""
print(f"| Ignis{graphs} | {mean(ours, 0):.4f} | {mean(ours, 1):.3f} | {mean(theirs, 1) / mean(ours, 1):.2f}x |")
if eager:
    print(f"| Ignis, eager steps ({len(eager)} run) | {mean(eager, 0):.4f} | {mean(eager, 1):.3f} | "
          f"{mean(theirs, 1) / mean(eager, 1):.2f}x |")
print(f"| PyTorch twin | {mean(theirs, 0):.4f} | {mean(theirs, 1):.3f} | 1.00x |")
print()
print(f"Ignis's training epochs ran at {mean(ours, 2):.2f} TFLOP/s (0.709 GFLOP per trained image)")
PY
