#!/usr/bin/env python3
"""The rows of bench/core_ops.cpp in PyTorch, one JSON line per row (engine "torch").

Same shapes, same inputs (linspace), same timing rule (warm-up, repeat until --min-time
seconds and 5 repetitions, median), same byte and FLOP counts, so compare_core.sh can put the
two side by side. A first line {"engine":"torch","info":...} says which BLAS library the
process loaded and the thread count, so a run that fell back to the reference BLAS shows.

Usage: core_ops.py [--threads N] [--min-time S] [--only row,row,...]
"""
import argparse
import json
import math
import statistics
import time

import torch


def time_median(fn, min_time):
    for _ in range(2):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < min_time:
        a = time.perf_counter()
        fn()
        times.append(time.perf_counter() - a)
    return statistics.median(times)


def loaded_blas():
    """Paths of the BLAS/LAPACK shared objects mapped into this process."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if any(k in path for k in ("blas", "lapack", "jemalloc")) and path.startswith("/"):
                libs.add(path)
    return sorted(libs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    only = [r for r in a.only.split(",") if r]
    wanted = lambda op: not only or op in only
    torch.set_grad_enabled(False)
    F = 4
    print(json.dumps({"engine": "torch", "info": {"version": torch.__version__,
                      "threads": torch.get_num_threads(), "libs": loaded_blas()}}), flush=True)

    def row(op, shape, nbytes, flops, fn):
        if not wanted(op):
            return
        s = time_median(fn, a.min_time)
        print(json.dumps({"engine": "torch", "op": op, "shape": shape, "threads": a.threads,
                          "seconds": s, "gbytes_per_s": nbytes / s / 1e9,
                          "gflops": flops / s / 1e9}), flush=True)

    def inp(shape, lo, hi):
        n = 1
        for d in shape:
            n *= d
        return torch.linspace(lo, hi, n).reshape(shape)

    N16, R = float(1 << 24), 4096.0
    NR = R * R
    if wanted("add"):
        x, y = inp([1 << 24], -1, 1), inp([1 << 24], 2, -2)
        row("add", "[16777216]+[16777216]", 3 * N16 * F, N16, lambda: x + y)
    if wanted("add_broadcast"):
        x, y = inp([4096, 4096], -1, 1), inp([4096], 0, 1)
        row("add_broadcast", "[4096,4096]+[4096]", (2 * NR + R) * F, NR, lambda: x + y)
    if wanted("softmax"):
        x = inp([4096, 4096], -5, 5)
        row("softmax", "[4096,4096] dim=-1", 2 * NR * F, 5 * NR, lambda: torch.softmax(x, -1))
    if wanted("sum_dim0") or wanted("sum_dim1"):
        x = inp([4096, 4096], -1, 1)
        row("sum_dim0", "[4096,4096] dim=0", (NR + R) * F, NR, lambda: torch.sum(x, 0))
        row("sum_dim1", "[4096,4096] dim=1", (NR + R) * F, NR, lambda: torch.sum(x, 1))
    if wanted("matmul"):
        x, y = inp([1024, 1024], -1, 1), inp([1024, 1024], 1, -1)
        n = 1024.0
        row("matmul", "1024x1024x1024", 3 * n * n * F, 2 * n ** 3, lambda: torch.matmul(x, y))
    def chain(x, y):
        t = x * y
        t = t + y
        t = torch.relu(t)
        t = t * 0.5
        t = t + 1.0
        t = torch.neg(t)
        t = torch.abs(t)
        t = t - y
        t = torch.maximum(t, y)
        return torch.clamp(t, -1.0, 1.0)

    # Ignis's *_fused rows run the chain through ignis::fuse; PyTorch's way to compile it is
    # TorchScript (its CPU fuser, where the build enables one, may fuse it too).
    scripted = torch.jit.script(chain)
    chain_bytes, fused_bytes = 5 * 3 + 5 * 2, 3
    for name, shape in (("small_chain", [64, 512]), ("large_chain", [4096, 4096])):
        if not (wanted(name) or wanted(name + "_fused")):
            continue
        x, y = inp(shape, -2, 2), inp(shape, 1, -1)
        n = float(shape[0] * shape[1])
        label = "10 ops on [%d,%d]" % tuple(shape)
        row(name, label, chain_bytes * n * F, 10 * n, lambda: chain(x, y))
        for _ in range(20):  # the profiling executor specialises over the first calls
            scripted(x, y)
        row(name + "_fused", label + ", fused", fused_bytes * n * F, 10 * n,
            lambda: scripted(x, y))

    # The batch-norm rows of core_ops.cpp: bf16 channels-last activations with float32
    # parameters (as autocast leaves a convolution's output), training forward and backward;
    # the ReLU row composes relu(batch_norm(x)) as a PyTorch model does.
    if wanted("batch_norm_bf16_cl") or wanted("batch_norm_relu_bf16_cl"):
        shape = [128, 64, 32, 32]
        n, B = 128.0 * 64 * 32 * 32, 2
        cl = lambda t: t.to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
        x, g = cl(inp(shape, -2, 3)), cl(inp(shape, 1, -1))
        w, b = inp([64], 0.5, 1.5), inp([64], -0.5, 0.5)
        rm, rv = torch.zeros(64), torch.ones(64)
        for t in (x, w, b):
            t.requires_grad_()

        def step(relu):
            with torch.enable_grad():
                for t in (x, w, b):
                    t.grad = None
                y = torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True)
                if relu:
                    y = torch.relu(y)
                y.backward(g)

        label = "[128,64,32,32] bf16 channels-last, fwd+bwd"
        row("batch_norm_bf16_cl", label, 5 * n * B, 14 * n, lambda: step(False))
        row("batch_norm_relu_bf16_cl", label, 6 * n * B, 15 * n, lambda: step(True))

    # The norm, pooling, layout and scan rows of core_ops.cpp.
    if wanted("layer_norm") or wanted("group_norm"):
        x, g = inp([4096, 512], -2, 3), inp([4096, 512], 1, -1)
        w, b = inp([512], 0.5, 1.5), inp([512], -0.5, 0.5)
        xi, gi = inp([32, 64, 32, 32], -2, 3), inp([32, 64, 32, 32], 1, -1)
        wi, bi = inp([64], 0.5, 1.5), inp([64], -0.5, 0.5)
        for t in (x, w, b, xi, wi, bi):
            t.requires_grad_()
        n, ni = 4096.0 * 512, 32.0 * 64 * 32 * 32

        def ln():
            with torch.enable_grad():
                for t in (x, w, b):
                    t.grad = None
                torch.nn.functional.layer_norm(x, [512], w, b).backward(g)

        def gn():
            with torch.enable_grad():
                for t in (xi, wi, bi):
                    t.grad = None
                torch.nn.functional.group_norm(xi, 8, wi, bi).backward(gi)

        row("layer_norm", "[4096,512] f32, fwd+bwd", 5 * n * 4, 14 * n, ln)
        row("group_norm", "[32,64,32,32] f32, 8 groups, fwd+bwd", 5 * ni * 4, 14 * ni, gn)
    if wanted("avg_pool_cl"):
        cl = torch.channels_last
        xp = inp([128, 64, 32, 32], -2, 3).contiguous(memory_format=cl).requires_grad_()
        gp = inp([128, 64, 16, 16], 1, -1).contiguous(memory_format=cl)
        n = 128.0 * 64 * 32 * 32

        def ap():
            with torch.enable_grad():
                xp.grad = None
                torch.nn.functional.avg_pool2d(xp, 2).backward(gp)

        row("avg_pool_cl", "[128,64,32,32] f32 channels-last, 2x2, fwd+bwd", 2.5 * n * 4, 1.25 * n, ap)
    if wanted("transpose_copy"):
        xt = inp([4096, 4096], -1, 1)
        row("transpose_copy", "[4096,4096] f32, t().contiguous()", 2 * 4096.0 * 4096 * 4, 0,
            lambda: xt.t().contiguous())
    # NCHW -> channels-last conversions of ResNet's first-stage activations.
    for name, dtype in (("to_channels_last", torch.float32),
                        ("to_channels_last_bf16", torch.bfloat16)):
        if wanted(name):
            xc = inp([128, 64, 32, 32], -1, 1).to(dtype)
            row(name, "[128,64,32,32] NCHW -> channels-last",
                2.0 * xc.numel() * xc.element_size(), 0,
                lambda xc=xc: xc.contiguous(memory_format=torch.channels_last))
    if wanted("cumsum_last"):
        xs = inp([4096, 512], -1, 1)
        n = 4096.0 * 512
        row("cumsum_last", "[4096,512] f32, dim 1", 2 * n * 4, n, lambda: torch.cumsum(xs, 1))
    if wanted("mean_hw"):
        xm = inp([128, 512, 4, 4], -1, 1)
        n = 128.0 * 512 * 16
        row("mean_hw", "[128,512,4,4] f32, mean over (2,3)", 1.0625 * n * 4, n, lambda: xm.mean((2, 3)))

    # Float32 batch norm, training forward and backward: BatchNorm1d as an MLP runs it,
    # [4096, 512], and BatchNorm2d as ResNet-18's first stage runs it in float32, NCHW and
    # channels-last.
    for name, label, shape in (("batch_norm_1d", "[4096,512] f32, fwd+bwd", [4096, 512]),
                               ("batch_norm_2d", "[128,64,32,32] f32 NCHW, fwd+bwd",
                                [128, 64, 32, 32]),
                               ("batch_norm_2d_cl", "[128,64,32,32] f32 channels-last, fwd+bwd",
                                [128, 64, 32, 32])):
        if not wanted(name):
            continue
        C, B = shape[1], 4
        n = float(math.prod(shape))
        x, g = inp(shape, -2, 3), inp(shape, 1, -1)
        if name.endswith("_cl"):
            x = x.contiguous(memory_format=torch.channels_last)
            g = g.contiguous(memory_format=torch.channels_last)
        w, b = inp([C], 0.5, 1.5), inp([C], -0.5, 0.5)
        rm, rv = torch.zeros(C), torch.ones(C)
        for t in (x, w, b):
            t.requires_grad_()

        def step_bn(x=x, g=g, w=w, b=b, rm=rm, rv=rv):
            with torch.enable_grad():
                for t in (x, w, b):
                    t.grad = None
                torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True).backward(g)

        row(name, label, 5 * n * B, 14 * n, step_bn)

    # Classification heads at ImageNet's width: fused cross-entropy forward + backward and the
    # argmax of each row.
    if wanted("cross_entropy") or wanted("argmax_rows"):
        n = 4096.0 * 1000
        xc = inp([4096, 1000], -4, 4).requires_grad_()
        yc = torch.remainder(torch.arange(4096) * 7, 1000)

        def ce():
            with torch.enable_grad():
                xc.grad = None
                torch.nn.functional.cross_entropy(xc, yc).backward()

        xa = xc.detach()
        row("cross_entropy", "[4096,1000] f32, fwd+bwd", 4 * n * 4, 8 * n, ce)
        row("argmax_rows", "[4096,1000] f32, dim 1", n * 4, n, lambda: xa.argmax(1))
    if wanted("exp") or wanted("tanh") or wanted("gelu") or wanted("logsumexp"):
        x = inp([4096, 4096], -5, 5)
        row("exp", "[4096,4096] f32", 2 * NR * F, NR, lambda: torch.exp(x))
        row("tanh", "[4096,4096] f32", 2 * NR * F, NR, lambda: torch.tanh(x))
        row("gelu", "[4096,4096] f32, exact (erf)", 2 * NR * F, NR,
            lambda: torch.nn.functional.gelu(x))
        row("logsumexp", "[4096,4096] f32, dim 1", (NR + R) * F, 3 * NR,
            lambda: torch.logsumexp(x, 1))
    if wanted("sin") or wanted("log1p") or wanted("softplus") or wanted("pow"):
        x, p = inp([4096, 4096], -5, 5), inp([4096, 4096], 0, 10)
        row("sin", "[4096,4096] f32", 2 * NR * F, NR, lambda: torch.sin(x))
        row("log1p", "[4096,4096] f32, in [0,10]", 2 * NR * F, NR, lambda: torch.log1p(p))
        row("softplus", "[4096,4096] f32", 2 * NR * F, NR,
            lambda: torch.nn.functional.softplus(x))
        row("pow", "[4096,4096] f32 in [0,10], ^2.5", 2 * NR * F, NR, lambda: torch.pow(p, 2.5))
    if wanted("masked_fill"):
        x = inp([4096, 4096], -5, 5)
        mask = torch.sin(x * 1000.0) > 0
        row("masked_fill", "[4096,4096] f32, bool mask", NR * (2 * F + 1), 0,
            lambda: x.masked_fill(mask, -1e9))
    if wanted("topk5"):
        s = torch.sin(inp([4096, 1000], 0, 4096000))
        row("topk5", "[4096,1000] f32, k=5 dim 1", 4096.0 * 1000 * F, 0, lambda: torch.topk(s, 5, 1))
    if wanted("cat_dim1"):
        c1, c2 = inp([2048, 512], -1, 1), inp([2048, 512], 1, -1)
        row("cat_dim1", "2x[2048,512] f32 -> [2048,1024]", 4.0 * 2048 * 1024 * F, 0,
            lambda: torch.cat([c1, c2], 1))

    # The rows of layers and steps outside the training rows (core_ops.cpp says which).
    for name, cl in (("max_pool3x3", False), ("max_pool3x3_cl", True)):
        if not wanted(name):
            continue
        fmt = torch.channels_last if cl else torch.contiguous_format
        x = inp([64, 64, 64, 64], -1, 1).contiguous(memory_format=fmt).requires_grad_()
        g = inp([64, 64, 32, 32], 1, -1).contiguous(memory_format=fmt)
        n = 64.0 * 64 * 64 * 64

        def pool(x=x, g=g):
            with torch.enable_grad():
                x.grad = None
                torch.nn.functional.max_pool2d(x, 3, 2, 1).backward(g)
        row(name, "[64,64,64,64] f32, 3x3 s2 p1, fwd+bwd", (n + n / 4 * 3 + n / 4 * 3 + n) * F,
            2.25 * n, pool)
    for name, cl in (("avg_pool3x3", False), ("avg_pool3x3_cl", True)):
        if not wanted(name):
            continue
        fmt = torch.channels_last if cl else torch.contiguous_format
        x = inp([32, 64, 56, 56], -1, 1).contiguous(memory_format=fmt).requires_grad_()
        g = inp([32, 64, 56, 56], 1, -1).contiguous(memory_format=fmt)
        n = 32.0 * 64 * 56 * 56

        def avg_pool(x=x, g=g):
            with torch.enable_grad():
                x.grad = None
                torch.nn.functional.avg_pool2d(x, 3, 1, 1).backward(g)
        row(name, "[32,64,56,56] f32, 3x3 s1 p1, fwd+bwd", 4 * n * F, 18 * n, avg_pool)
    if wanted("adamw"):
        params = [inp([1024, 1024], -1, 1).requires_grad_() for _ in range(8)]
        for p in params:
            p.grad = inp([1024, 1024], -1e-3, 1e-3)
        opt = torch.optim.AdamW(params, lr=1e-3)
        n = 8.0 * 1024 * 1024
        row("adamw", "8x[1024,1024] f32, one step", 7 * n * F, 12 * n, opt.step)
    if wanted("interpolate_bilinear"):
        x = inp([32, 64, 32, 32], -1, 1).requires_grad_()
        g = inp([32, 64, 64, 64], 1, -1)
        n = 32.0 * 64 * 64 * 64

        def up():
            with torch.enable_grad():
                x.grad = None
                torch.nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear").backward(g)
        row("interpolate_bilinear", "[32,64,32,32] f32 x2, fwd+bwd", 2.5 * n * F, 14 * n, up)
    if wanted("pad_reflect"):
        x = inp([512, 3, 32, 32], -1, 1)
        row("pad_reflect", "[512,3,32,32] f32 by 4",
            (512.0 * 3 * 32 * 32 + 512.0 * 3 * 40 * 40) * F, 0,
            lambda: torch.nn.functional.pad(x, (4, 4, 4, 4), mode="reflect"))
    if wanted("permute_heads"):
        x = inp([64, 12, 128, 64], -1, 1)
        row("permute_heads", "[64,12,128,64] f32 permute(0,2,1,3)", 2.0 * x.numel() * F, 0,
            lambda: x.permute(0, 2, 1, 3).contiguous())
    # Depthwise 3x3 convolutions forward and backward: NCHW, channels-last, and stride 2.
    for name, cl, stride in (("conv_depthwise", False, 1), ("conv_depthwise_cl", True, 1),
                             ("conv_depthwise_s2", False, 2)):
        if not wanted(name):
            continue
        fmt = torch.channels_last if cl else torch.contiguous_format
        side = 32 // stride
        x = inp([32, 128, 32, 32], -1, 1).contiguous(memory_format=fmt).requires_grad_()
        w = inp([128, 1, 3, 3], -0.1, 0.1).requires_grad_()
        g = inp([32, 128, side, side], 1, -1).contiguous(memory_format=fmt)
        n = 32.0 * 128 * 32 * 32
        m = 32.0 * 128 * side * side

        def dw(x=x, w=w, g=g, stride=stride):
            with torch.enable_grad():
                x.grad = w.grad = None
                torch.nn.functional.conv2d(x, w, None, stride=stride, padding=1,
                                           groups=128).backward(g)
        shape = ("[32,128,32,32] f32 3x3 groups 128" + (" channels-last" if cl else "") +
                 (" stride 2" if stride == 2 else "") + ", fwd+bwd")
        row(name, shape, (3 * n + 2 * m) * F, 3 * 18 * m, dw)

if __name__ == "__main__":
    main()
