#!/usr/bin/env bash
# --amp bf16|fp16: the choice is printed and recorded in config.json; fp16 keeps its GradScaler
# state in checkpoint.safetensors; a run SIGKILLed while writing its second checkpoint and
# resumed ends with the uninterrupted run's model.safetensors (byte for byte) and
# metrics.jsonl, and the scaler's growth tracker continues across the resume (3 steps per
# epoch here, no overflow at these magnitudes: 3 after epoch 1, 9 at the end). Resuming with
# another --amp, or an unknown --amp, is refused.
# Usage: train_amp.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

# scalar FILE KEY: the float64 scalar KEY of a safetensors file (parsed here: an 8-byte header
# length, the JSON header, then the data).
scalar() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
t = json.loads(raw[8:8 + n])[sys.argv[2]]
assert t["dtype"] == "F64" and t["shape"] == [], t
lo = 8 + n + t["data_offsets"][0]
print(f"{struct.unpack('<d', raw[lo:lo + 8])[0]:g}")
PY
}

flags=(--data synthetic --limit 384 --epochs 3 --model mlp)
for amp in bf16 fp16; do
  "$bin" train "${flags[@]}" --amp $amp --out full-$amp >full-$amp.txt
  grep -q "^amp     $amp autocast" full-$amp.txt
  grep -q "\"amp\": \"$amp\"" full-$amp/config.json
  kill_at_second_checkpoint "${flags[@]}" --amp $amp --out cut-$amp
  [ "$(python3 "$tool" state cut-$amp/checkpoint.safetensors)" = "1 0" ]
  if [ $amp = fp16 ]; then
    [ "$(scalar cut-$amp/checkpoint.safetensors grad_scaler/scale)" = 65536 ]
    [ "$(scalar cut-$amp/checkpoint.safetensors grad_scaler/_growth_tracker)" = 3 ]
  else
    ! python3 "$tool" keys cut-$amp/checkpoint.safetensors | grep -q grad_scaler
  fi
  "$bin" train --resume cut-$amp >resume.txt
  grep -q '^resume  after epoch 1$' resume.txt
  python3 "$tool" same full-$amp/model.safetensors cut-$amp/model.safetensors
  same_metrics full-$amp cut-$amp
done
[ "$(scalar cut-fp16/checkpoint.safetensors grad_scaler/_growth_tracker)" = 9 ]
# Mixed precision changes the numbers: the bf16 run's weights are not float32's.
"$bin" train "${flags[@]}" --out full-off >/dev/null
grep -q '"amp": "off"' full-off/config.json
python3 "$tool" differ full-off/model.safetensors full-bf16/model.safetensors 0

kill_at_second_checkpoint "${flags[@]}" --amp fp16 --out cut
expect_error 'amp: "fp16" vs "bf16"' "$bin" train --resume cut --amp bf16
expect_error '--amp: fp32 not in \{off,bf16,fp16\}' "$bin" train "${flags[@]}" --amp fp32
echo "ok: --amp is recorded, resumes bit for bit with the scaler's state, bad values refused"
