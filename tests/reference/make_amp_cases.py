#!/usr/bin/env python3
"""PyTorch's answers for the autocast reference test (test_amp_reference.cpp).

Usage: make_amp_cases.py --out FILE.safetensors

Writes inputs ("in/<name>") and outputs ("out/<case>") as a safetensors file (written here with
the standard library and torch only). Outputs come from torch.autocast("cpu", bfloat16) where
PyTorch 1.13's CPU lists agree with the CUDA lists Ignis follows on every device; where they
differ (softmax, log_softmax, sum, exp, log, pow, layer_norm: float32 on CUDA, bf16 on the CPU;
conv_transpose2d: bf16 on CUDA, float32 on the CPU) the CUDA behaviour is computed explicitly
(the op on the input cast to float32, or in float32 on bf16-rounded inputs, rounded once), and
the case name says so with a "cuda_list/" prefix. Also the float32 gradients of a linear layer trained under autocast,
and a conv -> batch_norm (training, float32 parameters and running statistics) -> relu chain
with its activations, gradients and running statistics, in NCHW and channels-last.
"""
import argparse
import json
import struct

import torch
import torch.nn.functional as F

NAMES = {torch.float32: "F32", torch.float64: "F64", torch.bfloat16: "BF16", torch.int64: "I64"}


def raw_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        b = raw_bytes(t)
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def conv_bn_relu(i, out, prefix, fmt):
    """conv2d -> batch_norm -> relu under autocast, then sum((y * up).float()).backward()."""
    x = i["img"].detach().contiguous(memory_format=fmt).clone(memory_format=fmt).requires_grad_()
    w = i["cw"].clone().requires_grad_()
    bn_w = i["bn_w"].clone().requires_grad_()
    bn_b = i["bn_b"].clone().requires_grad_()
    rm, rv = i["bn_rm"].clone(), i["bn_rv"].clone()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = F.conv2d(x, w, None, padding=1)
        h.retain_grad()
        y = F.relu(F.batch_norm(h, rm, rv, bn_w, bn_b, training=True, momentum=0.1, eps=1e-5))
        (y * i["bn_up"]).float().sum().backward()
    for name, t in (("conv", h), ("y", y), ("grad_conv", h.grad), ("grad_x", x.grad),
                    ("grad_w", w.grad), ("grad_bn_w", bn_w.grad), ("grad_bn_b", bn_b.grad),
                    ("running_mean", rm), ("running_var", rv)):
        out[prefix + name] = t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out_path = ap.parse_args().out
    g = torch.Generator().manual_seed(1234)
    r = lambda *s: torch.randn(*s, generator=g)
    inp = {
        "x": r(16, 40), "w": r(24, 40), "b": r(24), "x3": r(3, 16, 40),
        "img": r(2, 3, 9, 9), "cw": r(6, 3, 3, 3), "cb": r(6), "tw": r(3, 4, 3, 3),
        "logits": r(16, 7).bfloat16(), "target": torch.randint(0, 7, (16,), generator=g),
        "y": r(16, 7).bfloat16(), "pos": (r(16, 7).abs() + 0.5).bfloat16(),
        "bn_w": r(6).abs() + 0.5, "bn_b": r(6), "bn_rm": r(6) * 0.1, "bn_rv": r(6).abs() + 0.5,
        "bn_up": r(2, 6, 9, 9).bfloat16(),
    }
    i = inp
    out = {}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out["mm"] = torch.mm(i["x"], i["w"].t())
        out["matmul_3d"] = torch.matmul(i["x3"], i["w"].t())
        out["bmm"] = torch.bmm(i["x3"], i["x3"].transpose(1, 2))
        out["addmm"] = torch.addmm(i["b"], i["x"], i["w"].t())
        out["linear"] = F.linear(i["x"], i["w"], i["b"])
        out["conv2d"] = F.conv2d(i["img"], i["cw"], i["cb"], padding=1)
        out["conv2d_strided"] = F.conv2d(i["img"], i["cw"], None, stride=2)
        out["mm_float64"] = torch.mm(i["x"].double(), i["w"].t().double())
        out["cross_entropy"] = F.cross_entropy(i["logits"], i["target"])
        out["cross_entropy_smoothing"] = F.cross_entropy(i["logits"], i["target"],
                                                         label_smoothing=0.1)
        out["nll_loss"] = F.nll_loss(i["logits"], i["target"])
        out["mse_loss"] = F.mse_loss(i["logits"], i["y"])
        out["l1_loss"] = F.l1_loss(i["logits"], i["y"])
        out["smooth_l1_loss"] = F.smooth_l1_loss(i["logits"], i["y"])
        out["bce_with_logits"] = F.binary_cross_entropy_with_logits(i["logits"],
                                                                    torch.sigmoid(i["y"]))
        out["prod"] = i["pos"].prod()
        out["add_mixed"] = i["logits"] + i["y"].float()
        out["relu"] = F.relu(i["logits"])
        out["max_pool2d"] = F.max_pool2d(i["img"].bfloat16(), 2)
        # Gradients through the casts: float32 parameters get float32 gradients.
        w = i["w"].clone().requires_grad_()
        b = i["b"].clone().requires_grad_()
        loss = F.cross_entropy(F.linear(i["x"], w, b)[:, :7], i["target"])
    loss.backward()
    out["grad/loss"] = loss
    out["grad/w"] = w.grad
    out["grad/b"] = b.grad
    for layout, fmt in (("nchw", torch.contiguous_format), ("cl", torch.channels_last)):
        conv_bn_relu(i, out, f"grad/conv_bn_relu_{layout}/", fmt)
    f = lambda t: t.float()
    out["cuda_list/softmax"] = torch.softmax(f(i["logits"]), 1)
    out["cuda_list/log_softmax"] = torch.log_softmax(f(i["logits"]), 1)
    out["cuda_list/sum"] = f(i["logits"]).sum()
    out["cuda_list/exp"] = torch.exp(f(i["logits"]))
    out["cuda_list/log"] = torch.log(f(i["pos"]))
    out["cuda_list/pow"] = torch.pow(f(i["pos"]), 3.0)
    out["cuda_list/layer_norm"] = F.layer_norm(f(i["logits"]), (7,))
    # bf16 inputs, float accumulation, one rounding (PyTorch 1.13's own bf16 CPU
    # conv_transpose2d rejects this weight: it reads the channel count from the wrong dim).
    rounded = lambda t: t.bfloat16().float()
    out["cuda_list/conv_transpose2d"] = F.conv_transpose2d(rounded(i["img"]),
                                                           rounded(i["tw"])).bfloat16()
    tensors = {f"in/{k}": v for k, v in inp.items()}
    tensors.update({f"out/{k}": v for k, v in out.items()})
    write_safetensors(out_path, tensors)


if __name__ == "__main__":
    main()
