#!/usr/bin/env bash
# --batch-size auto on the CPU: the recipe's batch of 128, said so in the log, capped by the
# training part's size, and recorded in config.json as the number used, so --config of that
# file repeats the run exactly. (On a GPU the search runs trial steps; its logic is tested in
# test_trainer_memory with a fake step.)
# Usage: train_batch_auto.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
common=(--data synthetic --model mlp --epochs 1 --device cpu)
"$bin" train "${common[@]}" --limit 512 --batch-size auto --out big >big.txt
grep -q '^batch   auto on the CPU: 128 (the recipe' big.txt
grep -q 'recipe  1 epochs, batch 128,' big.txt
# 100 samples: 70 in the training part (split 0.7,0.1,0.2), so the batch is 70.
echo '{"batch-size": "auto", "limit": 100}' >auto.json
"$bin" train "${common[@]}" --config auto.json --out small >small.txt
grep -q '^batch   auto on the CPU: 70 (the recipe.s batch, capped by the training part' small.txt
python3 - <<'PY'
import json
for run, want in (("big", 128), ("small", 70)):
    cfg = json.load(open(run + "/config.json"))
    assert cfg["batch_size"] == want and cfg["train_size"] >= want, (run, cfg["batch_size"])
print("ok: config.json records the batch sizes chosen")
PY
"$bin" train --config small/config.json --out again >/dev/null
cmp small/model.safetensors again/model.safetensors
expect_error "--batch-size: 'big' is not a whole number >= 1 or auto" "$bin" train --batch-size big
echo "ok: --batch-size auto"
