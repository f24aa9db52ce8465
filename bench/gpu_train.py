#!/usr/bin/env python3
"""The rows of bench/gpu_train.cpp in PyTorch on the GPU, one JSON line per row (engine "torch").

Same layers and shapes, same timing (CUDA events, median of 20 after 3 warm-ups for layers;
steps queued back to back then one synchronize for training steps), same models (the MLP
written out as models.h defines it; torchvision's resnet18 with the CIFAR stem). Eager mode,
cudnn.benchmark off and TF32 off, as Ignis's defaults. The "_graph" rows capture the whole
step (forward, loss, backward, SGD step) with torch.cuda.graph after warm-up steps on a side
stream, as PyTorch's "whole network capture" recipe does; each timed step copies x and y into
the static inputs and replays, as cuda::capture_step does.
"""
import json
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
import torchvision


def median_ms(fn, reps=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def layer_row(name, ms):
    print(json.dumps({"engine": "torch", "row": name, "ms": round(ms, 4)}), flush=True)


def step_row(name, model, x, y, warmup, steps, captured=False):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    static_x, static_y = x.clone(), y.clone()

    def body(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def step():
        body(x, y)

    if captured:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                body(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            body(static_x, static_y)

        def step():  # noqa: F811 (the captured variant)
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    sec = time.perf_counter() - t0
    print(json.dumps({"engine": "torch", "row": name, "batch": x.shape[0],
                      "steps_per_s": round(steps / sec, 2),
                      "samples_per_s": round(steps * x.shape[0] / sec, 1),
                      "peak_MiB": torch.cuda.max_memory_allocated() >> 20}), flush=True)


def resnet18_cifar():
    m = torchvision.models.resnet18(num_classes=10)
    m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    m.maxpool = nn.Identity()
    return m


def main():
    if not torch.cuda.is_available():
        print(json.dumps({"engine": "torch", "info": "no CUDA device"}))
        return
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda:0")
    print(json.dumps({"engine": "torch", "info": torch.cuda.get_device_name(0),
                      "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}))
    x = torch.randn(256, 64, 32, 32, device=dev, requires_grad=True)
    w = (torch.randn(64, 64, 3, 3, device=dev) * 0.05).requires_grad_()
    g = torch.randn(256, 64, 32, 32, device=dev)
    layer_row("conv3x3_64_b256_fwd", median_ms(lambda: F.conv2d(x.detach(), w.detach(), padding=1)))
    layer_row("conv3x3_64_b256_fwd_bwd",
              median_ms(lambda: F.conv2d(x, w, padding=1).backward(g)))
    rm, rv = torch.zeros(64, device=dev), torch.ones(64, device=dev)
    gamma = torch.ones(64, device=dev, requires_grad=True)
    beta = torch.zeros(64, device=dev, requires_grad=True)
    layer_row("batch_norm_64_b256_fwd", median_ms(
        lambda: F.batch_norm(x.detach(), rm, rv, gamma.detach(), beta.detach(), True)))
    layer_row("batch_norm_64_b256_fwd_bwd", median_ms(
        lambda: F.batch_norm(x, rm, rv, gamma, beta, True).backward(g)))
    layer_row("max_pool3x3s2_64_b256_fwd",
              median_ms(lambda: F.max_pool2d(x.detach(), 3, stride=2, padding=1)))
    layer_row("adaptive_avg_pool_512x4x4_b256_fwd", median_ms(
        lambda: F.adaptive_avg_pool2d(x.detach()[:, :32].reshape(256, 512, 4, 4), 1)))
    logits = torch.randn(4096, 1000, device=dev)
    labels = torch.randint(0, 1000, (4096,), device=dev)
    layer_row("cross_entropy_4096x1000_fwd", median_ms(lambda: F.cross_entropy(logits, labels)))
    p = torch.randn(11_000_000, device=dev, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.01, momentum=0.9)
    p.sum().backward()
    layer_row("sgd_momentum_11M", median_ms(opt.step))

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    step_row("mlp_b64", mlp, torch.randn(64, 10, device=dev),
             torch.randint(0, 10, (64,), device=dev), 20, 500)
    step_row("mlp_b64_graph", mlp, torch.randn(64, 10, device=dev),
             torch.randint(0, 10, (64,), device=dev), 20, 500, captured=True)
    step_row("resnet18_cifar_b256", resnet18_cifar().to(dev),
             torch.randn(256, 3, 32, 32, device=dev),
             torch.randint(0, 10, (256,), device=dev), 3, 20)


if __name__ == "__main__":
    main()
