#!/usr/bin/env bash
# A full disk while the checkpoint is written: a resumed run under a file-size limit (ulimit -f,
# SIGXFSZ ignored, so write() fails with EFBIG) smaller than the checkpoint exits 2 with one
# line naming the checkpoint file; the previous checkpoint is byte for byte what it was, no
# temporary file is left behind, and resuming without the limit still ends with the weights
# of an uninterrupted run.
# Usage: train_disk_full.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

flags=(--data synthetic --limit 384 --epochs 3 --model mlp)
"$bin" train "${flags[@]}" --out full >/dev/null
# A run stopped while writing its second checkpoint: checkpoint.safetensors holds epoch 1.
IGNIS_TEST_CHECKPOINT_PAUSE=$PWD/pause "$bin" train "${flags[@]}" --out run >/dev/null &
pid=$!
{ wait_until 120 test -e pause; rm pause; }
wait_until 120 test -e pause
kill -KILL $pid
wait $pid 2>/dev/null || true
rm pause
size=$(stat -c %s run/checkpoint.safetensors)
before=$(md5sum <run/checkpoint.safetensors)
limit_kib=$((size / 2048))  # half the checkpoint; config.json and metrics.jsonl fit
echo "checkpoint $size bytes; file-size limit ${limit_kib} KiB"
expect_error "cannot write the checkpoint run/checkpoint.safetensors \(.*checkpoint.safetensors.next.tmp-[0-9]+.*File too large\)" \
  bash -c 'trap "" XFSZ; ulimit -f "$1"; exec "$2" train --resume run' limit "$limit_kib" "$bin"
[ "$(md5sum <run/checkpoint.safetensors)" = "$before" ] || { echo "FAIL: checkpoint changed"; exit 1; }
[ "$(python3 "$tool" state run/checkpoint.safetensors)" = "1 0" ]
leftovers=$(find run -name '*.tmp-*' -o -name '*.next')
[ -z "$leftovers" ] || { echo "FAIL: left behind: $leftovers"; exit 1; }
"$bin" train --resume run >/dev/null
python3 "$tool" same full/model.safetensors run/model.safetensors
echo "ok: a full disk leaves the previous checkpoint intact and the run resumable"
