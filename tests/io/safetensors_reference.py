#!/usr/bin/env python3
"""PyTorch's side of the safetensors reference test (test_safetensors_reference.cpp).

Usage: safetensors_reference.py --dir DIR

(a) Reads DIR/ignis_resnet18.safetensors (written by Ignis) with the minimal reader below into
    torchvision's resnet18 (strict load), runs it in eval mode on the input stored in
    DIR/ignis_io.safetensors and checks the logits against the ones Ignis computed (same file).
(b) Writes a seeded torchvision resnet18's state dict to DIR/torch_resnet18.safetensors and an
    input plus PyTorch's logits to DIR/torch_io.safetensors, for Ignis to load and compare.
The `safetensors` package is not used (nor assumed installed): reader and writer are written
here from the format description, so the test checks Ignis against the format, not against
one shared implementation. Exits non-zero with a message on any mismatch.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch
import torchvision

NP = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
      "I32": np.int32, "U8": np.uint8, "BOOL": np.bool_}
TAGS = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
        torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8",
        torch.bool: "BOOL"}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    header.pop("__metadata__", None)
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, end = e["data_offsets"]
        if e["dtype"] == "BF16":  # numpy has no bfloat16: go through int16 bits
            arr = np.frombuffer(data[b:end], dtype=np.int16).copy()
            t = torch.from_numpy(arr).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.frombuffer(data[b:end], dtype=NP[e["dtype"]]).copy())
        out[name] = t.reshape(e["shape"])
    return out


def write_safetensors(tensors, path):
    header, chunks, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 \
            else t.numpy().tobytes()
        header[name] = {"dtype": TAGS[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def check(name, got, want):
    err = (got - want).abs().max().item()
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
        sys.exit(f"{name}: logits differ from Ignis's (max abs error {err})")
    print(f"{name}: logits match (max abs error {err:.3g})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    d = ap.parse_args().dir
    torch.set_num_threads(4)

    # (a) Ignis -> PyTorch.
    model = torchvision.models.resnet18()
    model.load_state_dict(read_safetensors(os.path.join(d, "ignis_resnet18.safetensors")),
                          strict=True)
    model.eval()
    io = read_safetensors(os.path.join(d, "ignis_io.safetensors"))
    with torch.no_grad():
        check("ignis->torch", model(io["input"]), io["logits"])

    # (b) PyTorch -> Ignis. A train-mode forward first moves the BatchNorm running statistics
    # (and num_batches_tracked) away from their initial values, so loading them matters.
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        model(torch.randn(4, 3, 64, 64))
        model.eval()
        logits = model(x)
    write_safetensors(model.state_dict(), os.path.join(d, "torch_resnet18.safetensors"))
    write_safetensors({"input": x, "logits": logits}, os.path.join(d, "torch_io.safetensors"))


if __name__ == "__main__":
    main()
