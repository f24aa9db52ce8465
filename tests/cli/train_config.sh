#!/usr/bin/env bash
# --config FILE: the same options from a JSON file (dashed keys) and a TOML file (underscored
# keys) give the same run as the flags; a flag on the command line overrides the file; and
# `--config run/config.json` repeats a run exactly (model.safetensors byte for byte). The
# refusals (unknown key, wrong type, bad value, unreadable or unparsable file) are the
# cli.error.config_* cases.
# Usage: train_config.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"

flags=(--data synthetic --limit 256 --epochs 2 --model mlp --batch-size 32 --lr 0.02 --no-nesterov)
"$bin" train "${flags[@]}" --out flags >/dev/null
cat >options.json <<'JSON'
{"data": "synthetic", "limit": 256, "epochs": 2, "model": "mlp", "batch-size": 32,
 "lr": 0.02, "nesterov": false, "out": "json"}
JSON
cat >options.toml <<'TOML'
data = "synthetic"
limit = 256
epochs = 2
model = "mlp"
batch_size = 32
lr = 0.02
nesterov = false
out = "toml"
TOML
"$bin" train --config options.json >/dev/null
"$bin" train --config options.toml >/dev/null
python3 "$tool" same flags/model.safetensors json/model.safetensors
python3 "$tool" same flags/model.safetensors toml/model.safetensors

# The command line wins: epochs and out from the flags, the rest from the file.
"$bin" train --config options.json --epochs 1 --out override >/dev/null
# A run's config.json as --config repeats it (into another directory).
"$bin" train --config json/config.json --out again >/dev/null
python3 "$tool" same json/model.safetensors again/model.safetensors
# Without --limit, config.json records "limit": 0 (all samples), which must read back too.
"$bin" train --data synthetic --epochs 1 --model mlp --out nolimit >/dev/null
"$bin" train --config nolimit/config.json --out nolimit_again >/dev/null
python3 "$tool" same nolimit/model.safetensors nolimit_again/model.safetensors
python3 - <<'PY'
import json
flags, js, tm, over, again = (json.load(open(f"{d}/config.json"))
                              for d in ["flags", "json", "toml", "override", "again"])
ignored = {"out", "started_at"}
for other in (js, tm, again):
    diff = {k for k in flags if k not in ignored and flags[k] != other.get(k)}
    assert not diff, diff
assert flags["batch_size"] == 32 and flags["lr"] == 0.02 and flags["nesterov"] is False
assert over["epochs"] == 1 and over["out"] == "override" and over["batch_size"] == 32, over
assert over["lr"] == 0.02 and over["nesterov"] is False, over
print("ok: config.json of the flag, JSON, TOML and repeated runs agree; the flag overrides")
PY
