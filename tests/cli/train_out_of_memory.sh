#!/usr/bin/env bash
# Running out of memory in `ignis train`, for real: under a virtual-memory limit (ulimit -v)
# too small for a batch of 1024 CNN activations, the CPU allocator throws OutOfMemoryError in
# the first step. Expected: exit 2, one line with the batch size, the epoch and step, the
# allocator's text, the suggestions, and that no checkpoint had been written; the run
# directory keeps its config.json and holds no half-written file. (A GPU's caching allocator
# gives the same line with the requested, free, allocated and reserved bytes, and names an
# existing checkpoint as intact: tests/cli/test_trainer_memory.cpp builds those from a fake
# device.)
# Usage: train_out_of_memory.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

# 2,073 training samples in batches of 1024: 3 steps per epoch. 500 MB of address space holds
# the process and its data (one OpenMP thread, one malloc arena, so the figure does not grow
# with the machine's cores) but not the step's activations (about 100 MB per layer output).
# A build with the CUDA backend also maps its CUDA libraries (cuBLASLt alone is ~500 MB of
# address space) before main(): their file sizes are added, so the limit bites in the step
# on either build.
cuda_kb=0
for lib in $(ldd "$bin" | awk '/cuda|cublas|cudnn|nccl/ && $3 ~ /^\// {print $3}'); do
  cuda_kb=$((cuda_kb + $(stat -L -c %s "$lib") / 1024))
done
limited() { (ulimit -v $((500000 + cuda_kb)) && OMP_NUM_THREADS=1 MALLOC_ARENA_MAX=1 "$@"); }
expect_error "^ignis: error: out of memory at batch size 1024 \(epoch 1 step 1/3\) \(\[cpu allocator\] out of memory: tried to allocate [0-9]+ bytes.*\)\. Train with a smaller --batch-size \(e\.g\. 512\), or keep the batch of 1024 with --accumulate 2 \(micro-batches of 512\), or train in mixed precision with --amp bf16, or let --batch-size auto find the largest that fits; no checkpoint had been written yet$" \
  limited "$bin" train --data synthetic --limit 2304 --split 0.9,0.05,0.05 --model cnn \
  --batch-size 1024 --epochs 1 --out run
ls run
[ -f run/config.json ] && [ ! -e run/checkpoint.safetensors ] && [ ! -e run/model.safetensors ]
[ -z "$(find run -name '*.tmp*')" ] || { echo "FAIL: a temporary file was left"; exit 1; }
echo "ok: out of memory reported in one line with exit 2"
