"""PyTorch's memory-format rules, recorded for test_memory_format_reference.

Usage: make_memory_format_cases.py --out FILE.json

For each 4-D shape (size-1 and size-0 dims included, where PyTorch's rules are specific) and
each way of laying it out, records the strides PyTorch gives and what its format queries
answer: is_contiguous for both formats, to(memory_format=...) and contiguous(memory_format=...)
(strides, and whether the tensor itself came back), clone() and empty_like() with
preserve_format (which, for layouts that are not dense, follow suggest_memory_format), and
empty(shape, memory_format=channels_last).
"""
import argparse
import json

import torch

SHAPES = [
    (2, 3, 4, 5), (2, 1, 4, 5), (1, 3, 1, 1), (2, 3, 1, 1), (1, 1, 1, 1), (2, 3, 1, 5),
    (1, 3, 4, 1), (4, 8, 2, 2), (2, 0, 4, 5), (0, 3, 4, 5), (3, 2, 1, 6),
]

# How the input is laid out; test_memory_format_reference.cpp builds the same layouts.
LAYOUTS = {
    "contiguous": lambda x: x,
    "channels_last": lambda x: x.contiguous(memory_format=torch.channels_last),
    "nhwc_permuted": lambda x: x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
    "transposed_hw": lambda x: x.transpose(2, 3).contiguous().transpose(2, 3),
    "channels_last_every_other_w": lambda x: torch.cat([x, x], 3)
    .contiguous(memory_format=torch.channels_last)[:, :, :, ::2],
    "contiguous_every_other_w": lambda x: torch.cat([x, x], 3)[:, :, :, ::2],
}

CL = torch.channels_last
CF = torch.contiguous_format


def describe(t, base):
    return {"strides": list(t.stride()), "same": t is base}


def record(shape, layout):
    x = LAYOUTS[layout](torch.zeros(shape))
    return {
        "shape": list(shape),
        "layout": layout,
        "strides": list(x.stride()),
        "is_contiguous": x.is_contiguous(),
        "is_contiguous_channels_last": x.is_contiguous(memory_format=CL),
        "to_channels_last": describe(x.to(memory_format=CL), x),
        "to_contiguous": describe(x.to(memory_format=CF), x),
        "contiguous_channels_last": describe(x.contiguous(memory_format=CL), x),
        "contiguous": describe(x.contiguous(), x),
        "clone": describe(x.clone(), x),
        "empty_like": describe(torch.empty_like(x), x),
        "empty_channels_last": list(torch.empty(shape, memory_format=CL).stride()),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cases = [record(s, layout) for s in SHAPES for layout in LAYOUTS]
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, indent=1)


if __name__ == "__main__":
    main()
