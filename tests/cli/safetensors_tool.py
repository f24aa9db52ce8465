#!/usr/bin/env python3
"""Reads safetensors files for the CLI tests with nothing but the standard library (the format
is parsed here, independently of ignis's reader).

  safetensors_tool.py same A B [PREFIX_B]   tensors of A equal B's (keys under PREFIX_B in B),
                                            byte for byte; exit 1 naming the first difference
  safetensors_tool.py close A B TOL         same keys and shapes, float32 values within TOL
                                            (absolute); prints the largest difference
  safetensors_tool.py differ A B TOL        like close, but requires a difference above TOL
  safetensors_tool.py finite A              every float32 value is finite
  safetensors_tool.py state A               prints the checkpoint's "state" epoch and step
  safetensors_tool.py keys A                prints the tensor names in file order
"""
import json
import math
import struct
import sys


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    end = max((v["data_offsets"][1] for v in header.values()), default=0)
    assert len(data) == end, f"{path}: {len(data)} data bytes, header says {end}"
    tensors = {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
               for k, v in header.items()}
    return tensors, meta


def floats(t):
    dtype, _, b = t
    assert dtype == "F32", dtype
    return struct.unpack(f"<{len(b) // 4}f", b)


def max_diff(a, b):
    ta, tb = read(a)[0], read(b)[0]
    assert ta.keys() == tb.keys(), (sorted(ta), sorted(tb))
    worst, where = 0.0, None
    for k in ta:
        assert ta[k][:2] == tb[k][:2], (k, ta[k][:2], tb[k][:2])
        if ta[k][0] != "F32":
            assert ta[k][2] == tb[k][2], k
            continue
        for x, y in zip(floats(ta[k]), floats(tb[k])):
            if abs(x - y) > worst:
                worst, where = abs(x - y), k
    print(f"largest difference {worst:.3g} (in {where})")
    return worst


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "same":
        ta = read(path)[0]
        tb = read(sys.argv[3])[0]
        prefix = sys.argv[4] if len(sys.argv) > 4 else ""
        tb = {k[len(prefix):]: v for k, v in tb.items() if k.startswith(prefix)}
        if ta.keys() != tb.keys():
            sys.exit(f"FAIL: keys differ: {sorted(ta)} vs {sorted(tb)}")
        for k in ta:
            if ta[k] != tb[k]:
                sys.exit(f"FAIL: tensor {k} differs")
        print(f"ok: {len(ta)} tensors identical byte for byte")
    elif cmd in ("close", "differ"):
        worst = max_diff(path, sys.argv[3])
        tol = float(sys.argv[4])
        if (worst <= tol) != (cmd == "close"):
            sys.exit(f"FAIL: largest difference {worst} vs tolerance {tol} ({cmd})")
    elif cmd == "finite":
        for k, t in read(path)[0].items():
            if t[0] == "F32" and not all(math.isfinite(x) for x in floats(t)):
                sys.exit(f"FAIL: {k} has non-finite values")
        print("ok: all finite")
    elif cmd == "state":
        s = json.loads(read(path)[1]["state"])
        print(s["epoch"], s["step"])
    elif cmd == "keys":
        print("\n".join(read(path)[0]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":  # importable: predict.sh uses read()
    main()
