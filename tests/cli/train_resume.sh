#!/usr/bin/env bash
# --resume: a run SIGKILLed while writing its second checkpoint continues from the first and
# ends with the same model.safetensors (every tensor byte for byte) and metrics.jsonl as an
# uninterrupted run, for SGD + one-cycle and for Adam + warm-up/cosine + augmentation. Then
# the refusals, each exit 2 with one line, leaving the run directory untouched: resuming with
# different flags, a damaged, truncated or missing checkpoint, a directory that is not a run,
# and starting over (or another run) in a directory holding an interrupted run.
# Usage: train_resume.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

for variant in sgd adam; do
  flags=(--data synthetic --limit 384 --epochs 3 --model mlp)
  [ $variant = adam ] && flags+=(--optimizer adam --schedule cosine --warmup 0.5 --augment standard)
  "$bin" train "${flags[@]}" --out full-$variant >/dev/null
  kill_at_second_checkpoint "${flags[@]}" --out cut-$variant
  [ "$(python3 "$tool" state cut-$variant/checkpoint.safetensors)" = "1 0" ]
  [ ! -e cut-$variant/model.safetensors ]
  "$bin" train --resume cut-$variant >resume.txt
  grep -q '^resume  after epoch 1$' resume.txt
  python3 "$tool" same full-$variant/model.safetensors cut-$variant/model.safetensors
  same_metrics full-$variant cut-$variant
done

# The refusals, on an interrupted run.
flags=(--data synthetic --limit 384 --epochs 3 --model mlp)
kill_at_second_checkpoint "${flags[@]}" --out cut
before=$(dir_digest cut)
expect_error 'differ from the run.s config.json \(lr: 0.05 vs 0.2\)' "$bin" train --resume cut --lr 0.2
expect_error 'holds an interrupted run; continue it with --resume cut' "$bin" train "${flags[@]}" --out cut
expect_error 'already holds a different run' "$bin" train "${flags[@]}" --seed 5 --out cut
expect_error 'a resumed run stays in its directory' "$bin" train --resume cut --out elsewhere
expect_error "--resume nowhere: no config.json there" "$bin" train --resume nowhere
[ "$(dir_digest cut)" = "$before" ] || { echo "FAIL: a refused command changed the run directory"; exit 1; }
cp -r cut flipped && cp -r cut truncated && cp -r cut missing
python3 - <<'PY'
# One byte of tensor data flipped (the header still parses): only the checksum can tell.
p = "flipped/checkpoint.safetensors"
b = bytearray(open(p, "rb").read())
b[-5] ^= 0x40
open(p, "wb").write(bytes(b))
PY
truncate -s 100000 truncated/checkpoint.safetensors
rm missing/checkpoint.safetensors
expect_error 'checkpoint.safetensors is damaged \(checksum mismatch\)' "$bin" train --resume flipped
expect_error 'checkpoint.safetensors is damaged' "$bin" train --resume truncated
expect_error 'no checkpoint.safetensors' "$bin" train --resume missing
echo "ok: resume gives the uninterrupted run's weights; bad resumes are refused"
