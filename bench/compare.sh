#!/usr/bin/env bash
# Ignis against PyTorch on this machine, in one go, ending in one table of ratios (PyTorch's
# cost / Ignis's: > 1 means Ignis is ahead). Parts, each skipped with a note when it cannot run:
#   train    the CPU training rows of compare_train.sh (MLP, small CNN, ResNet-18 in float32
#            and bf16 autocast, the bf16 row also channels-last in both), at THREADS threads
#   startup  process start to the end of the first training step: `ignis train
#            --profile-startup` and the PyTorch twin (time_to_accuracy.py --startup-only), on
#            the full Fashion-MNIST; best of three
#   size     the `ignis` binary with libignis, against the LibTorch libraries a C++ program links
#   tta      time to accuracy: `ignis train` and its PyTorch twin (time_to_accuracy.py), the
#            same recipe for TTA_EPOCHS epochs; each process's wall time and test accuracy, and
#            whether both reached TARGET percent
#   gpu      (with a GPU) bench/gpu_train and gpu_train.py (eager, CUDA graphs, torch.compile
#            under a time limit), then startup and tta again on the GPU with ResNet-18
# The CPU parts take about 15 minutes on a quiet 2-core machine (estimated; tta alone ~7); the
# GPU part stays within GPU_SECONDS (default 240), each step getting what is left.
#
# Usage: bench/compare.sh [--cpu] [--gpu] [--build DIR] [--out DIR]
#   Default: the CPU parts, and the GPU part when nvidia-smi finds a GPU. DIR defaults: build,
#   and a fresh temporary directory (the raw JSON lines and logs stay there).
# Env: PARTS="train startup size tta" (CPU parts to run), THREADS ("2"), ROWS (compare_train's),
#   TTA_EPOCHS (8 on the CPU; GPU_TTA_EPOCHS 8: 4 epochs of ResNet-18 end at 92.9%, below
#   TARGET), TARGET (93), DATA_DIR (Fashion-MNIST's idx files), GPU_PARTS ("train startup tta
#   compile": the GPU part's steps; e.g. GPU_PARTS=tta for the time-to-accuracy row alone),
#   THREADS also for startup and tta (the first count in it; PyTorch's own default is the
#   number of physical cores, Ignis's the number of hardware threads, which differ with SMT)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=torch_env.sh
source "$here/torch_env.sh"
build=build out="" cpu="" gpu=""
while [ $# -gt 0 ]; do
  case $1 in
    --cpu) cpu=1 ;;
    --gpu) gpu=1 ;;
    --build) build=${2:?--build needs a directory}; shift ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    *) echo "compare.sh: unknown argument '$1' (usage: compare.sh [--cpu] [--gpu] [--build DIR] [--out DIR])" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$cpu$gpu" ]; then
  cpu=1
  nvidia-smi -L >/dev/null 2>&1 && gpu=1
fi
ignis="$build/apps/ignis/ignis"
[ -x "$ignis" ] || { echo "compare.sh: no ignis binary at $ignis (build the ignis_cli target, or pass --build DIR)" >&2; exit 1; }
out=${out:-$(mktemp -d)}
mkdir -p "$out" && out=$(cd "$out" && pwd)
results="$out/results.jsonl"
: >"$results"
data_dir=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
target=${TARGET:-93}
# Notes go to notes.txt and to the script's own stderr (fd 3), also from inside a step whose
# output is redirected to its log.
exec 3>&2
note() { echo "# $*" | tee -a "$out/notes.txt" >&3; }
# Prefix of every measured command: empty on the CPU; on the GPU `bounded` sets a timeout.
limit=()
note "load before: $(cut -d' ' -f1-3 /proc/loadavg); results in $out"

# Start-up of `ignis train` on DEVICE: runs it in the background until its `startup {...}`
# line appears, stops it (SIGTERM: it saves a checkpoint and exits) and prints a result line.
ignis_startup() {
  local device=$1 model=$2 log="$out/startup-ignis-$1.log" pid
  # The previous run's log goes first: the loop below could read it before the new process
  # has opened (and emptied) it.
  rm -rf "$out/startup-run" "$log"
  "${limit[@]}" "$ignis" train --data fashion-mnist --data-dir "$data_dir" --model "$model" --device "$device" \
    --epochs 1 --profile-startup --out "$out/startup-run" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1200); do  # up to 120 s
    grep -qs '^startup ' "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  grep -m1 '^startup ' "$log" | sed 's/^startup //' | "$python" -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"engine": "ignis", "device": sys.argv[1], "row": "start-up to first step",
                      "seconds": r["first_step_done_s"], "phases": r}))' "$device"
}

torch_startup() {
  "${limit[@]}" "${torch_env[@]}" "$python" "$here/time_to_accuracy.py" --startup-only --device "$1" --threads "$threads" \
    --model "$2" --data-dir "$data_dir" 2>>"$out/startup-torch-$1.log"
}

# Both engines at the same thread count (OMP_NUM_THREADS sizes Ignis's pool and the twin's
# --threads PyTorch's).
threads=${THREADS:-2}
threads=${threads%% *}
export OMP_NUM_THREADS=$threads

# Time to accuracy of both engines with the same recipe; a result line per engine.
tta() {
  local device=$1 model=$2 epochs=$3 t0 t1
  rm -rf "$out/tta-run-$device"
  t0=$(date +%s.%N)
  "${limit[@]}" "$ignis" train --data fashion-mnist --data-dir "$data_dir" --model "$model" --device "$device" \
    --epochs "$epochs" --out "$out/tta-run-$device" >"$out/tta-ignis-$device.log" 2>&1
  t1=$(date +%s.%N)
  # Under a GPU time limit the second engine gets what is left, not the same limit again.
  if [ ${#limit[@]} -gt 0 ] && declare -F left >/dev/null; then
    local rest
    rest=$(left)
    limit=(timeout -k 5 "$((rest > 5 ? rest : 5))")
  fi
  "$python" - "$out/tta-run-$device/metrics.jsonl" "$t0" "$t1" "$device" "$model" "$epochs" <<'PY'
import json, sys
try:
    test = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "test"][-1]
except (OSError, IndexError):
    sys.exit("compare.sh: ignis train left no test result in " + sys.argv[1])
print(json.dumps({"engine": "ignis", "device": sys.argv[4],
                  "row": "Fashion-MNIST %s, %s epochs: wall time, test accuracy" % (sys.argv[5], sys.argv[6]),
                  "seconds": float(sys.argv[3]) - float(sys.argv[2]), "accuracy": test["test_accuracy"]}))
PY
  "${limit[@]}" "${torch_env[@]}" "$python" "$here/time_to_accuracy.py" --device "$device" --model "$model" --threads "$threads" \
    --epochs "$epochs" --data-dir "$data_dir" 2>"$out/tta-torch-$device.err" |
    tee "$out/tta-torch-$device.log" | "$python" -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if "test_accuracy" in r:
        print(json.dumps({"engine": "torch", "device": sys.argv[1],
                          "row": "Fashion-MNIST %s, %s epochs: wall time, test accuracy" % (sys.argv[2], sys.argv[3]),
                          "seconds": r["wall_time_s"], "accuracy": r["test_accuracy"]}))' "$device" "$model" "$epochs"
}

parts=${PARTS:-train startup size tta}
has() { [[ " $parts " == *" $1 "* ]]; }
if [ -n "$cpu" ]; then
  if has train; then
    if [ -x "$build/bench/train_models" ]; then
      THREADS=${THREADS:-2} ROWS=${ROWS:-mlp small_cnn resnet18_b128 resnet18_b128_bf16 resnet18_b128_bf16_cl} \
        "$here/compare_train.sh" "$build/bench/train_models" >"$out/train.log" 2>&1
      grep '^{' "$out/train.log" >>"$results"
    else
      note "train: skipped, no $build/bench/train_models (build the train_models target)"
    fi
  fi
  if has startup; then
    for _ in 1 2 3; do
      ignis_startup cpu cnn >>"$results"
      torch_startup cpu cnn >>"$results"
    done
  fi
  if has size; then
    lib=$(ldd "$ignis" | awk '/libignis/ {print $3}')
    echo "{\"engine\": \"ignis\", \"row\": \"size: program + library\", \"bytes\": $(($(stat -Lc %s "$ignis") + $(stat -Lc %s "$lib")))}" >>"$results"
    torch_libs=$("$python" -c 'import torch, os; d = os.path.dirname(torch.__file__) + "/lib/"; print(" ".join(d + f for f in ("libtorch.so", "libtorch_cpu.so", "libc10.so", "libtorch_cuda.so", "libc10_cuda.so") if os.path.exists(d + f)))')
    # shellcheck disable=SC2086
    echo "{\"engine\": \"torch\", \"row\": \"size: program + library\", \"bytes\": $(stat -Lc %s $torch_libs | awk '{s += $1} END {print s}')}" >>"$results"
    note "size: LibTorch counted as $(echo "$torch_libs" | xargs -n1 basename | paste -sd' ')"
  fi
  if has tta; then
    if [ -d "$data_dir" ]; then
      tta cpu cnn "${TTA_EPOCHS:-8}" >>"$results"
    else
      note "tta: skipped, no Fashion-MNIST at $data_dir (set DATA_DIR)"
    fi
  fi
fi

if [ -n "$gpu" ]; then
  started=$(date +%s)
  left() { local l=$((${GPU_SECONDS:-240} - ($(date +%s) - started))); echo $((l > 0 ? l : 0)); }
  # Runs a command or function, each process it starts limited to the smaller of `cap`
  # seconds and what is left, or notes it skipped.
  bounded() {
    local cap=$1 name=$2 t rc
    shift 2
    t=$(left); t=$((cap < t ? cap : t))
    if [ "$t" -lt 10 ]; then note "$name: skipped (GPU time limit spent)"; return; fi
    limit=(timeout -k 5 "$t")
    "$@"
    rc=$?
    limit=()
    [ $rc -eq 0 ] || note "$name: exit $rc$([ $rc -eq 124 ] && echo " (stopped at its $t s limit)")"
  }
  limited() { "${limit[@]}" "$@"; }
  gpu_parts=" ${GPU_PARTS:-train startup tta compile} "
  hasg() { [[ "$gpu_parts" == *" $1 "* ]]; }
  py_bench=(limited "$python" "$here/gpu_train.py")
  if hasg train; then
    bounded 90 "gpu_train" limited "$build/bench/gpu_train" >"$out/gpu_train.jsonl" 2>&1
    bounded 60 "gpu_train.py eager" "${py_bench[@]}" >"$out/gpu_train_torch.jsonl" 2>&1
    bounded 60 "gpu_train.py graphs" "${py_bench[@]}" --variant graphs >>"$out/gpu_train_torch.jsonl" 2>&1
    cat "$out/gpu_train.jsonl" "$out/gpu_train_torch.jsonl" | grep '^{' >>"$results"
  fi
  if [ -d "$data_dir" ]; then
    if hasg startup; then
      bounded 30 "startup ignis cuda" ignis_startup cuda resnet18 >>"$results"
      bounded 30 "startup torch cuda" torch_startup cuda resnet18 >>"$results"
    fi
    if hasg tta; then bounded 150 "tta cuda" tta cuda resnet18 "${GPU_TTA_EPOCHS:-8}" >>"$results"; fi
  elif hasg startup || hasg tta; then
    note "gpu startup and tta: skipped, no Fashion-MNIST at $data_dir (set DATA_DIR)"
  fi
  # Compiling takes minutes, and may not finish: last, and only the rows whose targets name
  # torch.compile.
  if hasg compile; then
    bounded 120 "gpu_train.py compile" "${py_bench[@]}" --variant compile \
      --rows mlp_b64,resnet18_b512_bf16 >"$out/gpu_train_compile.jsonl" 2>&1
    grep '^{' "$out/gpu_train_compile.jsonl" >>"$results"
  fi
fi

note "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$python" "$here/ratio_table.py" "$results"
# The time-to-accuracy verdict: did both engines reach TARGET with the same recipe?
"$python" - "$results" "$target" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "accuracy" in r:
        rows.setdefault((r["row"], r.get("device", "cpu")), {})[r["engine"]] = r["accuracy"]
for (row, device), acc in rows.items():
    both = min(acc.values()) * 100
    verdict = ("both reach %s%%" % sys.argv[2] if both >= float(sys.argv[2]) else
               "%s%% not reached by %s; the highest accuracy both reach is %.2f%%"
               % (sys.argv[2], " and ".join(e for e, a in acc.items() if a * 100 < float(sys.argv[2])), both))
    print("\n%s on %s: %s (%s)" % (row, device, verdict,
          ", ".join("%s %.2f%%" % (e, 100 * a) for e, a in sorted(acc.items()))))
PY
