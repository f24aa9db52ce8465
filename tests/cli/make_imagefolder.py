"""Writes an image folder for the imagefolder CLI tests: DIR/dark and DIR/bright, COUNT PNGs
each (default 60) of mixed sizes, dark and bright (easy to tell apart), written with Python's
zlib (no imaging library), from a fixed seed.

Usage: make_imagefolder.py DIR [COUNT]
"""
import os
import random
import struct
import sys
import zlib


def png(path, w, h, pixel):
    raw = b"".join(b"\0" + bytes(v for x in range(w) for v in pixel(x, y)) for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


out = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 60
rng = random.Random(0)
for cls, lo in (("dark", 0), ("bright", 150)):
    os.makedirs(os.path.join(out, cls))
    for i in range(count):
        w, h = rng.choice([(16, 16), (20, 24), (30, 18)])
        png(os.path.join(out, cls, "%03d.png" % i), w, h,
            lambda x, y: [lo + rng.randrange(100) for _ in range(3)])
