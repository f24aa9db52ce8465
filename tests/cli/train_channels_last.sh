#!/usr/bin/env bash
# --channels-last: the choice is recorded in config.json (and only then, so runs from before
# the option resume unchanged), the model trains to the weights of the run without it (the
# same arithmetic in another memory order, so equal to float32 rounding) and is saved in
# PyTorch's (contiguous) layout.
# Usage: train_channels_last.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

flags=(--data synthetic --limit 256 --epochs 1 --model cnn --batch-size 32)
"$bin" train "${flags[@]}" --channels-last --out cl >cl.txt
"$bin" train "${flags[@]}" --out plain >plain.txt
grep -q '"channels_last": true' cl/config.json
# (A negated command does not stop a `set -e` script: the check needs its own exit.)
if grep -q channels_last plain/config.json; then
  echo "FAIL: channels_last recorded in the config of a run without --channels-last"
  exit 1
fi
python3 "$tool" finite cl/model.safetensors
python3 "$tool" close plain/model.safetensors cl/model.safetensors 1e-4
echo "ok: --channels-last is recorded and trains to the same weights"
