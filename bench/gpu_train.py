#!/usr/bin/env python3
"""The rows of bench/gpu_train.cpp in PyTorch on the GPU, one JSON line per row (engine "torch").

Same layers and shapes, same timing (CUDA events, median of 20 after 3 warm-ups for layers;
steps queued back to back then one synchronize for training steps), same models (the MLP
written out as models.h defines it; SmallCNN and the CIFAR-stem ResNet-18 of train_models.py),
cudnn.benchmark off and TF32 off, as Ignis's defaults. The bf16 rows run forward and loss under
torch.autocast("cuda", dtype=torch.bfloat16) with model and input in channels-last.

--variant picks how the training steps run (each line says which):
  eager    plain PyTorch (and the layer rows);
  graphs   the whole step (forward, loss, backward, SGD step) captured once into a CUDA graph
           on static input buffers, then replayed, as PyTorch's CUDA-graphs notes show;
  compile  the model through torch.compile (when this PyTorch has it; the caller bounds the
           time, since compiling takes minutes); the first steps, which compile, are warm-up.
--rows row,row limits the step rows.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from train_models import SmallCNN, resnet18_cifar  # the same models as the CPU rows


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
    print(json.dumps({"engine": "torch", "device": "cuda", "row": name, "ms": round(ms, 4),
                      "seconds": ms / 1e3}), flush=True)


def step_row(name, model, x, y, warmup, steps, variant, bf16=False):
    if bf16:  # channels-last, as the bf16 rows ask of both engines
        model, x = model.to(memory_format=torch.channels_last), x.to(
            memory_format=torch.channels_last)
    if variant == "compile":
        model = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    if variant == "graphs":
        # Warm up on a side stream (as the capture requires), then capture one whole step;
        # replaying it reruns the step on the same (static) x and y.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            # Autocast's cache of cast weights must not outlive the capture (PyTorch's notes).
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16, cache_enabled=False):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        step = graph.replay
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    sec = time.perf_counter() - t0
    print(json.dumps({"engine": "torch", "variant": variant, "device": "cuda", "row": name,
                      "batch": x.shape[0], "seconds": sec / steps,
                      "steps_per_s": round(steps / sec, 2),
                      "samples_per_s": round(steps * x.shape[0] / sec, 1),
                      "peak_MiB": torch.cuda.max_memory_allocated() >> 20}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=["eager", "graphs", "compile"], default="eager")
    ap.add_argument("--rows", default="", help="step rows to run (default: all)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"engine": "torch", "info": "no CUDA device"}))
        return
    if a.variant == "compile" and not hasattr(torch, "compile"):
        print(json.dumps({"engine": "torch", "info": "torch.compile missing in " + torch.__version__}))
        return
    torch.backends.cudnn.benchmark = False
    # IEEE float32 (no TF32), as Ignis's default: the newer switches where they exist (the
    # old ones are deprecated there), else the old ones.
    if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    else:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda:0")
    print(json.dumps({"engine": "torch", "info": torch.cuda.get_device_name(0),
                      "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}))
    if a.variant == "eager":
        layer_rows(dev)
    rows = [r for r in a.rows.split(",") if r]
    wanted = lambda r: not rows or r in rows
    labels = lambda n: torch.randint(0, 10, (n,), device=dev)
    torch.manual_seed(0)
    if wanted("mlp_b64"):
        mlp = nn.Sequential(nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
        step_row("mlp_b64", mlp, torch.randn(64, 10, device=dev), labels(64), 20, 500, a.variant)
    if wanted("small_cnn_b128"):
        step_row("small_cnn_b128", SmallCNN().to(dev), torch.randn(128, 1, 28, 28, device=dev),
                 labels(128), 10, 200, a.variant)
    for bf16 in (False, True):
        for batch in (128, 512):
            name = "resnet18_b%d%s" % (batch, "_bf16" if bf16 else "")
            if wanted(name):
                torch.manual_seed(0)
                step_row(name, resnet18_cifar().to(dev),
                         torch.randn(batch, 3, 32, 32, device=dev), labels(batch), 3,
                         40 if batch == 128 else 15, a.variant, bf16)


def layer_rows(dev):
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
        lambda: F.adaptive_avg_pool2d(x.detach()[:, :8].reshape(256, 512, 4, 4), 1)))
    logits = torch.randn(4096, 1000, device=dev)
    labels = torch.randint(0, 1000, (4096,), device=dev)
    layer_row("cross_entropy_4096x1000_fwd", median_ms(lambda: F.cross_entropy(logits, labels)))
    p = torch.randn(11_000_000, device=dev, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.01, momentum=0.9)
    p.sum().backward()
    layer_row("sgd_momentum_11M", median_ms(opt.step))


if __name__ == "__main__":
    main()
