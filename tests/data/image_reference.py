"""Writes image files with PIL and, next to each, what PIL (or torchvision) makes of it: the
oracle of tests/data/test_image.cpp.

Usage: image_reference.py OUT_DIR. Writes OUT_DIR/manifest.txt with one line per case:
  decode NAME FILE H W C      PIL's decode of FILE, converted to L or RGB, in NAME.raw
  resize NAME FILE H W C      torchvision's F.resize(antialias=False) of FILE's RGB image to
                              H x W ([C, H, W] uint8 in NAME.raw)
  shorter NAME FILE H W C     F.resize(img, SIZE) with an int (SIZE = NAME's suffix)
  crop NAME FILE H W C        F.center_crop(img, [H, W])
"""
import os
import sys

import numpy as np
from PIL import Image

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
lines = []


def smooth_rgb(h, w):
    # A gradient plus noise: smooth enough for JPEG to keep detail, noisy enough to matter.
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / max(w - 1, 1), y * 255 / max(h - 1, 1), (x + y) * 127 / (h + w)], -1)
    return np.clip(base + rng.normal(0, 25, (h, w, 3)), 0, 255).astype(np.uint8)


def record_decode(name, fname):
    path = os.path.join(out, fname)
    ref = Image.open(path)
    ref = ref.convert("L" if ref.mode in ("L", "LA", "1") else "RGB")
    a = np.asarray(ref)
    if a.ndim == 2:
        a = a[:, :, None]
    a.tofile(os.path.join(out, name + ".raw"))
    lines.append("decode %s %s %d %d %d" % (name, fname, *a.shape))


rgb = smooth_rgb(23, 37)
# PNGs of each PIL mode (16-bit ones are written by the C++ test with libpng).
Image.fromarray(rgb).save(os.path.join(out, "rgb.png"))
Image.fromarray(rgb[:, :, 0]).save(os.path.join(out, "gray.png"))
Image.fromarray(np.dstack([rgb, rgb[:, :, :1] ^ 0x5A])).save(os.path.join(out, "rgba.png"))
Image.fromarray(np.dstack([rgb[:, :, 1], rgb[:, :, 2]]), "LA").save(os.path.join(out, "la.png"))
Image.fromarray(rgb).quantize(16).save(os.path.join(out, "palette.png"))
Image.fromarray(rgb).quantize(8).save(os.path.join(out, "palette_trns.png"), transparency=3)
Image.fromarray(rgb[:, :, 0] > 128).save(os.path.join(out, "bilevel.png"))

for n in ["rgb", "gray", "rgba", "la", "palette", "palette_trns", "bilevel"]:
    record_decode(n + "_png", n + ".png")

# JPEGs: 4:2:0 and 4:4:4 colour, progressive, greyscale, CMYK (Adobe, stored inverted).
Image.fromarray(rgb).save(os.path.join(out, "rgb420.jpg"), quality=90)
Image.fromarray(rgb).save(os.path.join(out, "rgb444.jpg"), quality=95, subsampling=0)
Image.fromarray(rgb).save(os.path.join(out, "progressive.jpg"), quality=80, progressive=True)
Image.fromarray(rgb[:, :, 1]).save(os.path.join(out, "gray.jpg"), quality=85)
Image.fromarray(rgb).convert("CMYK").save(os.path.join(out, "cmyk.jpg"), quality=90)
for n in ["rgb420", "rgb444", "progressive", "gray", "cmyk"]:
    record_decode(n + "_jpg", n + ".jpg")

# torchvision's tensor resize (antialias=False) and centre crop of the PNG's RGB image.
import torch  # noqa: E402
import torchvision.transforms.functional as F  # noqa: E402

t = torch.from_numpy(rgb).permute(2, 0, 1).contiguous()


def record_tensor(kind, name, r):
    r.numpy().tofile(os.path.join(out, name + ".raw"))
    c, h, w = r.shape
    lines.append("%s %s rgb.png %d %d %d" % (kind, name, h, w, c))


for h, w in [(11, 16), (50, 61), (23, 5), (1, 1)]:
    record_tensor("resize", "resize_%dx%d" % (h, w), F.resize(t, [h, w], antialias=False))
for s in [10, 30]:
    record_tensor("shorter", "shorter_%d" % s, F.resize(t, s, antialias=False))
for h, w in [(15, 20), (14, 36), (30, 40), (23, 37)]:
    record_tensor("crop", "crop_%dx%d" % (h, w), F.center_crop(t, [h, w]))

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
