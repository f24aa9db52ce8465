#!/bin/sh
# A short synthetic run (always available): it must finish, print the report tables and
# write config.json, metrics.jsonl and model.safetensors with the expected content.
# Usage: train_synthetic.sh IGNIS WORK
set -eu
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$bin" train --data synthetic --limit 512 --epochs 1 --model mlp --out run >out.txt
cat out.txt
grep -q 'macro avg' out.txt
grep -q 'confusion matrix' out.txt
python3 - <<'PY'
import json
cfg = json.load(open("run/config.json"))
assert cfg["data"] == "synthetic" and cfg["model"] == "mlp" and cfg["epochs"] == 1, cfg
assert cfg["limit"] == 512 and cfg["train_size"] + cfg["val_size"] + cfg["test_size"] == 512, cfg
lines = [json.loads(l) for l in open("run/metrics.jsonl")]
assert [l["type"] for l in lines] == ["epoch", "test"], lines
assert len(lines[1]["confusion"]) == 10 and sum(map(sum, lines[1]["confusion"])) == cfg["test_size"]
# model.safetensors: u64 header length, JSON header with the MLP's keys and the metadata.
import struct
raw = open("run/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
assert header["__metadata__"]["model"] == "mlp", header["__metadata__"]
assert header["fc1.weight"]["dtype"] == "F32" and header["fc1.weight"]["shape"][0] == 512, header
end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
assert len(raw) == 8 + n + end, (len(raw), n, end)
print("ok: config.json, metrics.jsonl and model.safetensors")
PY
# A second run with the same options may reuse the directory; a different one may not.
"$bin" train --data synthetic --limit 512 --epochs 1 --model mlp --out run >/dev/null
set +e
"$bin" train --data synthetic --limit 512 --epochs 1 --model mlp --seed 7 --out run 2>err.txt
rc=$?
set -e
cat err.txt
[ "$rc" -eq 2 ] && grep -q 'already holds a different run' err.txt
echo "ok: a different run is refused"
