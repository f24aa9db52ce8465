#!/usr/bin/env bash
# --accumulate N: batch 64 as 2 micro-batches of 32 (and as 4 of 16) takes the same optimizer
# steps as batch 64 in one piece, on an MLP (no batch norm, so micro-batches see nothing of
# each other): the weights agree to float32 rounding. The tolerance means something: batch 32
# without accumulation (other steps) lands far outside it. --batch-size is the samples per
# step, so the shuffled sample order is the same in all the batch-64 runs.
# Usage: train_accumulate.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

# 359 training samples: 5 full batches of 64 and a last one of 39 (micro-batches 32 + 7; with
# --accumulate 4, 16 + 16 + 7): each micro-batch weighs by its share of the batch.
flags=(--data synthetic --limit 512 --epochs 2 --model mlp)
"$bin" train "${flags[@]}" --batch-size 64 --out whole >/dev/null
"$bin" train "${flags[@]}" --batch-size 64 --accumulate 2 --out acc2 >/dev/null
"$bin" train "${flags[@]}" --batch-size 64 --accumulate 4 --out acc4 >/dev/null
"$bin" train "${flags[@]}" --batch-size 32 --out small >/dev/null
grep -q '"accumulate": 2' acc2/config.json
python3 "$tool" close whole/model.safetensors acc2/model.safetensors 2e-6
python3 "$tool" close whole/model.safetensors acc4/model.safetensors 2e-6
python3 "$tool" differ whole/model.safetensors small/model.safetensors 1e-3
echo "ok: accumulated micro-batches step like the whole batch"
