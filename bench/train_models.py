#!/usr/bin/env python3
"""The rows of bench/train_models.cpp in PyTorch, one JSON line per row (engine "torch").

Same models (the MLP and small CNN written out here as models.h defines them; torchvision's
resnet18 with the CIFAR stem: 3x3 stride-1 conv1 and no max-pool), same step (forward,
cross_entropy, zero_grad, backward, SGD(lr 0.01, momentum 0.9) step), same shapes, same timing
rule and FLOP counts, so compare_train.sh can put the two side by side. The bf16 rows run the
forward and loss under torch.autocast("cpu", dtype=torch.bfloat16); resnet18_b128_bf16_cl also
converts the model and input to channels-last (torch.channels_last), as Ignis's row of the same
name does with MemoryFormat::channels_last. peak_rss_mb is VmHWM
after the row (the interpreter and torch's libraries included, as a user pays them). A first
line {"engine":"torch","info":...} names the BLAS and allocator libraries loaded.

Usage: train_models.py [--threads N] [--min-time S] [--resnet-steps N] [--only row,row,...]
"""
import argparse
import json
import statistics
import time

import torch
from torch import nn
import torchvision

from core_ops import loaded_blas


def time_median(fn, min_time, warmup, min_reps):
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        a = time.perf_counter()
        fn()
        times.append(time.perf_counter() - a)
    return statistics.median(times)


def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return float(line.split()[1]) / 1024
    return 0.0


def conv_flops(cin, cout, k, hw):
    return 2.0 * cin * cout * k * k * hw * hw


MLP_FLOPS = 2.0 * (10 * 512 + 512 * 10)
CNN_FLOPS = conv_flops(1, 32, 3, 28) + conv_flops(32, 64, 3, 14) + 2.0 * (64 * 7 * 7 * 128 + 128 * 10)


def resnet18_cifar_flops():
    f, cin, hw = conv_flops(3, 64, 3, 32), 64, 32
    for planes in (64, 128, 256, 512):
        down = planes != 64
        if down:
            hw //= 2
        f += conv_flops(cin, planes, 3, hw) + 3 * conv_flops(planes, planes, 3, hw)
        if down:
            f += conv_flops(cin, planes, 1, hw)
        cin = planes
    return f + 2.0 * 512 * 10


class SmallCNN(nn.Module):
    """models::SmallCNN: conv 1->32, relu, pool, conv 32->64, relu, pool, fc 3136->128->10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1, 1)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        h = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        h = torch.max_pool2d(torch.relu(self.conv2(h)), 2)
        return self.fc2(torch.relu(self.fc1(h.flatten(1))))


def resnet18_cifar(in_channels=3):
    m = torchvision.models.resnet18(num_classes=10)
    m.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
    nn.init.kaiming_normal_(m.conv1.weight, mode="fan_out", nonlinearity="relu")
    m.maxpool = nn.Identity()
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--resnet-steps", type=int, default=3)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    base_rss = status_mb("VmRSS")  # the interpreter with torch imported
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    only = [r for r in a.only.split(",") if r]
    wanted = lambda r: not only or r in only
    print(json.dumps({"engine": "torch", "info": {"version": torch.__version__,
                      "threads": torch.get_num_threads(), "libs": loaded_blas()}}), flush=True)

    def report(row, shape, s, samples, flops):
        print(json.dumps({"engine": "torch", "row": row, "shape": shape, "threads": a.threads,
                          "seconds": s, "steps_per_s": 1 / s, "samples_per_s": samples / s,
                          "gflops": flops / s / 1e9, "peak_rss_mb": status_mb("VmHWM"),
                          "base_rss_mb": base_rss}), flush=True)

    def train_row(row, shape, model, xshape, flops_per_sample, resnet, bf16=False,
                  channels_last=False):
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(xshape), torch.randint(0, 10, (xshape[0],))
        if channels_last:
            model, x = model.to(memory_format=torch.channels_last), x.to(
                memory_format=torch.channels_last)

        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)  # Ignis's default; faster than 1.13's default
            loss.backward()
            opt.step()
        s = (time_median(step, 0, 1, a.resnet_steps) if resnet
             else time_median(step, a.min_time, 3, 5))
        report(row, shape, s, xshape[0], 3 * flops_per_sample * xshape[0])

    if wanted("gemm"):
        x, y = torch.randn(1024, 1024), torch.randn(1024, 1024)
        report("gemm", "1024x1024x1024", time_median(lambda: x @ y, a.min_time, 2, 5), 0,
               2.0 * 1024 ** 3)
    if wanted("mlp"):
        mlp = nn.Sequential(nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10))
        train_row("mlp", "[64,10]", mlp, (64, 10), MLP_FLOPS, False)
    if wanted("small_cnn"):
        train_row("small_cnn", "[128,1,28,28]", SmallCNN(), (128, 1, 28, 28), CNN_FLOPS, False)
    if wanted("resnet18_b32"):
        train_row("resnet18_b32", "[32,3,32,32]", resnet18_cifar(), (32, 3, 32, 32),
                  resnet18_cifar_flops(), True)
    if wanted("resnet18_b128"):
        train_row("resnet18_b128", "[128,3,32,32]", resnet18_cifar(), (128, 3, 32, 32),
                  resnet18_cifar_flops(), True)
    if wanted("resnet18_b128_bf16"):
        train_row("resnet18_b128_bf16", "[128,3,32,32]", resnet18_cifar(), (128, 3, 32, 32),
                  resnet18_cifar_flops(), True, bf16=True)
    if wanted("resnet18_b128_bf16_cl"):
        train_row("resnet18_b128_bf16_cl", "[128,3,32,32]", resnet18_cifar(), (128, 3, 32, 32),
                  resnet18_cifar_flops(), True, bf16=True, channels_last=True)
    if wanted("resnet18_infer"):
        m = resnet18_cifar().eval()
        x = torch.randn(128, 3, 32, 32)
        with torch.no_grad():
            s = time_median(lambda: m(x), 0, 1, a.resnet_steps)
        report("resnet18_infer", "[128,3,32,32]", s, 128, resnet18_cifar_flops() * 128)


if __name__ == "__main__":
    main()
