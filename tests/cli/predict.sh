#!/usr/bin/env bash
# `ignis predict` against PyTorch. Two tiny runs: a CNN on a generated RGB image folder
# (16x16) and an MLP on the synthetic grey 28x28 set. New images are predicted with
# --format csv and json: for the CNN an exact-size RGB one, a grey one and a 20x24 one that
# must be resized and centre-cropped; for the MLP an RGB one turned grey and a 28x42 one that
# is only cropped. An independent Python computation decodes nothing (it keeps the pixels it
# wrote), converts grey/RGB with PIL's rule, resizes with torch's bilinear interpolate,
# normalises with config.json's mean and std, runs the same network in torch on the weights
# of model.safetensors (read by safetensors_tool.py) and must give the same top-k classes and
# probabilities (within 1e-5; 1e-4 for the resized image, where a value at a rounding tie
# may land one level apart, as ignis/data/image.h says). Then the failure contract: an undecodable image among good
# ones, an empty directory and a run without a model each exit 2 with one line naming the
# file, and print nothing on stdout.
# Usage: predict.sh IGNIS WORK PYTHON (PYTHON with torch; exit 77 = skipped without it)
set -euo pipefail
bin=$1 work=$2 py=${3:-python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
"$py" -c 'import torch' 2>/dev/null || { echo "SKIP: $py has no torch"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 - <<'PY'
import json, os, random, struct, zlib

def png(path, pixels, grey=False):
    h, w = len(pixels), len(pixels[0])
    raw = b"".join(b"\0" + bytes(v for px in row for v in px) for row in pixels)
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n"
                + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0 if grey else 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

rng = random.Random(1)
def image(w, h, lo, hi, c=3):
    return [[[rng.randrange(lo, hi) for _ in range(c)] for _ in range(w)] for _ in range(h)]

for cls, lo in (("dark", 0), ("bright", 150)):
    os.makedirs("images/" + cls)
    for i in range(40):
        png("images/%s/%03d.png" % (cls, i), image(16, 16, lo, lo + 100))
os.makedirs("new/sub")
os.makedirs("for_grey")
kept = {"new/exact.png": image(16, 16, 0, 256), "new/sub/wide.png": image(20, 24, 0, 256),
        "new/grey.png": image(16, 16, 0, 256, c=1), "for_grey/rgb.png": image(28, 28, 0, 256),
        "for_grey/tall.png": image(28, 42, 0, 256, c=1)}
for path, px in kept.items():
    png(path, px, grey=len(px[0][0]) == 1)
json.dump(kept, open("pixels.json", "w"))
PY
"$bin" train --data imagefolder:images --image-size 16 --model cnn --epochs 4 --out rgb >/dev/null
"$bin" train --data synthetic --limit 256 --model mlp --epochs 1 --out grey >/dev/null

# Directories are searched recursively and listed sorted by path, after the files named.
"$bin" predict rgb new/grey.png new --format csv >rgb.csv
"$bin" predict grey/model.safetensors for_grey --format json --top-k 3 >grey.json
"$bin" predict rgb new --top-k 9 >table.txt
# --run names the run as `ignis eval --run` does: the same predictions.
"$bin" predict --run rgb new/grey.png new --format csv >rgb_run.csv
cmp rgb.csv rgb_run.csv || { echo "FAIL: predict --run differs from the positional run"; exit 1; }
cat rgb.csv table.txt

"$py" - "$here/safetensors_tool.py" <<'PY'
import csv, json, sys
import torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
import safetensors_tool

pixels = json.load(open("pixels.json"))

def weights(run):
    out = {}
    for k, (dtype, shape, raw) in safetensors_tool.read(run + "/model.safetensors")[0].items():
        assert dtype == "F32", dtype
        out[k] = torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(shape)
    return out

def prepare(path, channels, side):
    x = torch.tensor(pixels[path], dtype=torch.int64)  # [H, W, c]
    if x.shape[2] == 1 and channels == 3:
        x = x.repeat(1, 1, 3)
    elif x.shape[2] == 3 and channels == 1:  # PIL's L
        x = (19595 * x[..., 0:1] + 38470 * x[..., 1:2] + 7471 * x[..., 2:3] + 32768) >> 16
    x = x.permute(2, 0, 1).to(torch.float32)[None]
    h, w = x.shape[2:]
    if (h, w) != (side, side):  # Resize(side) then CenterCrop(side), as torchvision
        nh, nw = (side, int(side * w / h)) if h <= w else (int(side * h / w), side)
        x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False)
        x = torch.round(x).clamp(0, 255)
        top, left = round((nh - side) / 2), round((nw - side) / 2)
        x = x[:, :, top:top + side, left:left + side]
    return x / 255

def expected(run, files, side, net):
    cfg = json.load(open(run + "/config.json"))
    c = len(cfg["mean"])
    mean = torch.tensor(cfg["mean"], dtype=torch.float32).view(1, c, 1, 1)
    std = torch.tensor(cfg["std"], dtype=torch.float32).view(1, c, 1, 1)
    x = (torch.cat([prepare(f, c, side) for f in files]) - mean) / std
    with torch.no_grad():
        logits = net(x, weights(run))
    return cfg["classes"], torch.softmax(logits.double(), 1)

def cnn(x, w):
    h = F.max_pool2d(F.relu(F.conv2d(x, w["conv1.weight"], w["conv1.bias"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w["conv2.weight"], w["conv2.bias"], padding=1)), 2)
    h = F.relu(F.linear(h.flatten(1), w["fc1.weight"], w["fc1.bias"]))
    return F.linear(h, w["fc2.weight"], w["fc2.bias"])

def mlp(x, w):
    h = F.relu(F.linear(x.flatten(1), w["fc1.weight"], w["fc1.bias"]))
    return F.linear(h, w["fc2.weight"], w["fc2.bias"])

def check(got, files, classes, prob, k):
    worst = 0.0
    assert [g[0] for g in got] == files, [g[0] for g in got]
    for (name, top), p in zip(got, prob):
        want = torch.topk(p, k)
        assert [t[0] for t in top] == want.indices.tolist(), (name, top, want)
        assert [t[1] for t in top] == [classes[i] for i in want.indices.tolist()], (name, top)
        diff = max(abs(q - v) for (_, _, q), v in zip(top, want.values.tolist()))
        assert diff < (1e-4 if name.endswith("wide.png") else 1e-5), (name, diff)
        worst = max(worst, diff)
    return worst

files = ["new/grey.png", "new/exact.png", "new/grey.png", "new/sub/wide.png"]
rows = list(csv.DictReader(open("rgb.csv")))
got = []
for r in rows:
    if r["rank"] == "1":
        got.append((r["image"], []))
    got[-1][1].append((int(r["index"]), r["class"], float(r["probability"])))
classes, prob = expected("rgb", files, 16, cnn)
worst = check(got, files, classes, prob, 2)  # 2 classes: every class ranked

files = ["for_grey/rgb.png", "for_grey/tall.png"]
got = [(e["image"], [(t["index"], t["class"], t["probability"]) for t in e["top"]])
       for e in json.load(open("grey.json"))]
classes, prob = expected("grey", files, 28, mlp)
worst = max(worst, check(got, files, classes, prob, 3))

# The table: one block per image, --top-k 9 clamped to the 2 classes, 4 decimals.
table = [l.split() for l in open("table.txt").read().split("\n\n", 1)[1].splitlines()[1:]]
assert len(table) == 6 and table[0][0] == "new/exact.png" and table[1][0] == "2", table
classes, prob = expected("rgb", ["new/exact.png"], 16, cnn)
assert abs(float(table[0][3]) - prob[0].max().item()) < 6e-5, (table[0], prob)
print(f"ok: predict matches torch (largest probability difference {worst:.2e})")
PY

# Bad input: one line naming the file, exit 2, and no partial output.
printf 'not a png' >new/broken.png
expect_error 'new/broken.png: expected a PNG' "$bin" predict rgb new/exact.png new
[ ! -s expect_out.txt ] || { echo "FAIL: output printed before the failure"; exit 1; }
mkdir empty
expect_error 'empty: no .png, .jpg or .jpeg files' "$bin" predict rgb empty
expect_error 'missing.png: no such file' "$bin" predict rgb missing.png
rm grey/model.safetensors
expect_error 'grey: no model.safetensors' "$bin" predict grey new/exact.png
expect_error 'nowhere: no such run directory' "$bin" predict nowhere new/exact.png
echo "ok: predict's bad input"
