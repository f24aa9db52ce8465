#!/usr/bin/env python3
"""PyTorch twin of `ignis train --preset airbench94`: the airbench94 CIFAR-10 speed recipe.

The recipe: the official split (50,000 training images, 10,000 test images) read from the
binary files of DIR (cifar-10-batches-bin), scaled to [0, 1] and normalised per channel, held
whole on the device. The net: a frozen 2x2 whitening conv (3 -> 24, weights from the
eigenvectors of the 2x2-patch covariance of the first 5,000 training images, bias trained for
the first three epochs only), three conv-pool-BN-GELU-conv-BN-GELU blocks (64, 256, 256 wide,
BatchNorm weights frozen at 1, dirac-initialised convs), a 3x3 max-pool and a bias-free linear
head scaled by 1/9. Batch 1024, 9.9 epochs, label smoothing 0.2 (summed loss), Nesterov SGD
(momentum 0.85) with decoupled-by-hand weight decay, BN biases at 64x the lr, a linear
warmup/warmdown schedule, Lookahead (an EMA pulled in every 5 steps), random 2-pixel reflect
translation and alternating flip done on the device, and test-time augmentation (mirror plus
two 1-pixel translations) for the final score.

Timing follows the record's rules: the whitening init, the training epochs and the final TTA
evaluation are timed (CUDA events on the GPU, perf_counter on the CPU); the per-epoch test
scores (no TTA) are not. A throwaway warm-up run of --warmup-steps steps comes first.

Output, JSON lines: per epoch {"engine": "torch", "run", "epoch", "train_loss",
"train_accuracy", "test_accuracy", "seconds"}, per run {"engine": "torch", "run",
"tta_test_accuracy", "time_s", "epochs", "device", "dtype"} and a summary {"engine": "torch",
"runs", "mean_tta_test_accuracy", "mean_time_s"}. With --step-time K only
{"engine": "torch", "row": "airbench94 step", "batch", "ms_per_step"}.
--save FILE writes the (last run's) trained state dict as safetensors; --load FILE with
--logits-out FILE loads such a file strictly and writes the eval-mode logits of the first
--limit-test test images, without ("logits") and with TTA ("tta_logits"), then exits.

Usage: airbench_torch.py [--data-dir DIR] [--device cpu|cuda] [--dtype float32|bf16]
                         [--epochs E] [--batch-size B] [--runs N] [--seed S] [--threads N]
                         [--warmup-steps K] [--limit-train N] [--limit-test N]
                         [--step-time K] [--save FILE] [--load FILE --logits-out FILE]
"""
import argparse
import json
import math
import os
import struct
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)
MOMENTUM = 0.85
KILOSTEP = 1024 * (1 + 1 / (1 - MOMENTUM))
LR = 11.5 / KILOSTEP
# Weight decay 0.0153 per 1024 samples, decoupled from the lr: per step, lr x decay is
# 0.0153 x batch / KILOSTEP (the Trainer multiplies by its batch size).
WD_PER_SAMPLE = 0.0153 / KILOSTEP
BIAS_LR_SCALE = 64.0
WHITEN_BIAS_EPOCHS = 3
WHITEN_IMAGES = 5000
WHITEN_EPS = 5e-4
EVAL_CHUNK = 2000


# ---------------------------------------------------------------------------- data

def read_cifar(paths, limit):
    """uint8 images [N, 3, 32, 32] and int64 labels [N] of the given binary files."""
    rows = np.concatenate([np.fromfile(p, dtype=np.uint8).reshape(-1, 3073) for p in paths])
    if limit:
        rows = rows[:limit]
    images = torch.from_numpy(rows[:, 1:].reshape(-1, 3, 32, 32).copy())
    labels = torch.from_numpy(rows[:, 0].astype(np.int64))
    return images, labels


def normalise(images, device):
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    return (images.to(device).float() / 255 - mean) / std


def load_split(data_dir, train, limit, device):
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
    images, labels = read_cifar([os.path.join(data_dir, n) for n in names], limit)
    return normalise(images, device), labels.to(device)


def augment(x, flip):
    """Random translation by up to 2 pixels (reflect padding, then a 32x32 crop at a random
    offset per image) and a left-right mirror where `flip` is set, as one gather."""
    b, c, h, w = x.shape
    padded = F.pad(x, (2, 2, 2, 2), mode="reflect").flatten(2)  # [B, C, (h+4)(w+4)]
    shift = torch.randint(0, 5, (b, 2), device=x.device)
    ar_h = torch.arange(h, device=x.device)
    ar_w = torch.arange(w, device=x.device)
    rows = shift[:, :1] + ar_h  # [B, h]
    cols = shift[:, 1:] + torch.where(flip[:, None], (w - 1) - ar_w, ar_w)  # [B, w]
    index = (rows[:, :, None] * (w + 4) + cols[:, None, :]).view(b, 1, h * w)
    return padded.gather(2, index.expand(b, c, h * w)).view(b, c, h, w)


# ---------------------------------------------------------------------------- model

class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(cout, eps=1e-12, momentum=0.4)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(cout, eps=1e-12, momentum=0.4)

    def forward(self, x):
        x = F.max_pool2d(self.conv1(x), 2)
        x = F.gelu(self.norm1(x))
        return F.gelu(self.norm2(self.conv2(x)))


class AirbenchNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.whiten = nn.Conv2d(3, 24, 2, padding=0, bias=True)
        self.block1 = Block(24, 64)
        self.block2 = Block(64, 256)
        self.block3 = Block(256, 256)
        self.head = nn.Linear(256, 10, bias=False)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    if m.bias is not None:
                        m.bias.zero_()
                    if m is not self.whiten:
                        nn.init.dirac_(m.weight[:m.weight.size(1)])
                elif isinstance(m, nn.BatchNorm2d):
                    m.weight.requires_grad_(False)
        self.whiten.weight.requires_grad_(False)

    def forward(self, x):
        x = F.gelu(self.whiten(x))
        x = self.block3(self.block2(self.block1(x)))
        x = F.max_pool2d(x, 3).flatten(1)
        return self.head(x) * (1 / 9)


def init_whitening(conv, images):
    """Sets conv's 2x2 filters to the covariance's eigenvectors over sqrt(eigenvalue + eps),
    largest eigenvalue first, then the same 12 negated."""
    cov, count = 0, 0
    for i in range(0, len(images), 1000):  # in float64, in parts to bound the memory
        patches = F.unfold(images[i:i + 1000].double(), 2)  # [n, 12, positions]
        patches = patches.transpose(1, 2).reshape(-1, patches.size(1))  # (channel, dy, dx)
        cov = cov + patches.T @ patches
        count += patches.size(0)
    evals, evecs = torch.linalg.eigh((cov / count).cpu())  # ascending
    evals, evecs = evals.flip(0), evecs.flip(1)
    filters = (evecs / torch.sqrt(evals + WHITEN_EPS)).T.reshape(-1, 3, 2, 2)
    filters = filters.to(device=conv.weight.device, dtype=conv.weight.dtype)
    with torch.no_grad():
        conv.weight.copy_(torch.cat([filters, -filters]))


def make_model(device, bf16):
    model = AirbenchNet().to(device)
    if bf16:
        model = model.to(memory_format=torch.channels_last)
    return model


# ---------------------------------------------------------------------------- training

class Clock:
    """Sums timed sections: CUDA events (synchronised at the end of each) or perf_counter."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.total = 0.0

    def start(self):
        if self.cuda:
            self.begin = torch.cuda.Event(enable_timing=True)
            self.begin.record()
        else:
            self.begin = time.perf_counter()

    def stop(self):
        if self.cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            torch.cuda.synchronize()
            self.total += 1e-3 * self.begin.elapsed_time(end)
        else:
            self.total += time.perf_counter() - self.begin
        return self.total


def schedule(total_steps):
    warmup = int(0.23 * total_steps)

    def factor(step):
        if step < warmup:
            f = step / warmup
            return 0.2 * (1 - f) + 1.0 * f
        f = (step - warmup) / max(total_steps - warmup, 1)
        return 1.0 * (1 - f) + 0.07 * f
    return factor


class Trainer:
    """Optimizer, schedule and Lookahead state of one training run of `model`."""

    def __init__(self, model, total_steps, bf16, batch):
        self.model, self.total_steps, self.bf16 = model, total_steps, bf16
        wd = WD_PER_SAMPLE * batch
        named = [(k, p) for k, p in model.named_parameters() if p.requires_grad]
        norm_biases = [p for k, p in named if "norm" in k]
        others = [p for k, p in named if "norm" not in k]
        lr_b = LR * BIAS_LR_SCALE
        self.opt = torch.optim.SGD([dict(params=norm_biases, lr=lr_b, weight_decay=wd / lr_b),
                                    dict(params=others, lr=LR, weight_decay=wd / LR)],
                                   lr=LR, momentum=MOMENTUM, nesterov=True)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, schedule(total_steps))
        # The state dict's tensors share storage with the parameters and buffers.
        self.current = {k: v for k, v in model.state_dict().items() if v.is_floating_point()}
        self.ema = {k: v.detach().clone() for k, v in self.current.items()}
        self.step_count = 0

    def lookahead(self, decay):
        with torch.no_grad():
            for k, e in self.ema.items():
                e.lerp_(self.current[k], 1 - decay)
                self.current[k].copy_(e)

    def step(self, x, y):
        """One training step; returns (summed loss, logits) and whether training is done."""
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            logits = self.model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=0.2, reduction="sum")
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.sched.step()
        self.step_count += 1
        s = self.step_count
        if s % 5 == 0:
            self.lookahead(0.95 ** 5 * (s / self.total_steps) ** 3)
        done = s >= self.total_steps
        if done:
            self.lookahead(1.0)
        return loss.detach(), logits.detach(), done


def batches(n, batch, steps, device):
    """Index batches of one epoch: a fresh shuffle, the last partial batch dropped."""
    order = torch.randperm(n, device=device)
    return [order[i * batch:(i + 1) * batch] for i in range(steps)]


def predict(model, x, tta, bf16):
    def net(v):
        if bf16:
            v = v.contiguous(memory_format=torch.channels_last)
        with torch.autocast(v.device.type, dtype=torch.bfloat16, enabled=bf16):
            return model(v).float()

    if not tta:
        return net(x)

    def mirror(v):
        return 0.5 * net(v) + 0.5 * net(v.flip(-1))
    p = F.pad(x, (1, 1, 1, 1), mode="reflect")
    t1, t2 = p[:, :, 0:32, 0:32], p[:, :, 2:34, 2:34]
    return 0.5 * mirror(x) + 0.5 * (mirror(t1) + mirror(t2)) / 2


def evaluate(model, images, labels, tta, bf16):
    """Eval-mode logits for all images (chunks of 2000) and the number right (a 0-d tensor)."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = torch.cat([predict(model, images[i:i + EVAL_CHUNK], tta, bf16)
                            for i in range(0, len(images), EVAL_CHUNK)])
    model.train(was_training)
    return logits, (logits.argmax(1) == labels).sum()


def train_run(a, data, run, device, bf16, emit):
    """One timed run; returns (TTA accuracy, seconds, model)."""
    train_x, train_y, test_x, test_y = data
    n = len(train_y)
    batch = min(a.batch_size, n)
    steps_per_epoch = max(n // a.batch_size, 1)
    total_steps = math.ceil(steps_per_epoch * a.epochs)
    torch.manual_seed(a.seed + run)
    model = make_model(device, bf16)
    clock = Clock(device)

    clock.start()
    init_whitening(model.whiten, train_x[:WHITEN_IMAGES])
    clock.stop()
    trainer = Trainer(model, total_steps, bf16, a.batch_size)  # after: holds the whitened weights

    flip = None
    done = False
    for epoch in range(math.ceil(a.epochs)):
        clock.start()
        model.train()
        model.whiten.bias.requires_grad_(epoch < WHITEN_BIAS_EPOCHS)
        if flip is None:
            flip = torch.rand(n, device=device) < 0.5
        for idx in batches(n, batch, steps_per_epoch, device):
            x = augment(train_x[idx], flip[idx] ^ (epoch % 2 == 1))
            if bf16:
                x = x.contiguous(memory_format=torch.channels_last)
            y = train_y[idx]
            loss, logits, done = trainer.step(x, y)
            if done:
                break
        seconds = clock.stop()
        _, right = evaluate(model, test_x, test_y, False, bf16)
        emit({"engine": "torch", "run": run, "epoch": epoch,
              "train_loss": loss.item() / len(y),
              "train_accuracy": (logits.argmax(1) == y).sum().item() / len(y),
              "test_accuracy": right.item() / len(test_y), "seconds": seconds})
        if done:
            break

    clock.start()
    _, tta_right = evaluate(model, test_x, test_y, True, bf16)
    seconds = clock.stop()
    return tta_right.item() / len(test_y), seconds, model


def warm_up(a, data, device, bf16):
    """A throwaway run of a.warmup_steps steps (whitening init, steps, evaluations)."""
    if a.warmup_steps <= 0:
        return
    train_x, train_y, test_x, test_y = data
    n = len(train_y)
    batch = min(a.batch_size, n)
    model = make_model(device, bf16)
    init_whitening(model.whiten, train_x[:WHITEN_IMAGES])
    trainer = Trainer(model, max(a.warmup_steps, 1), bf16, a.batch_size)
    flip = torch.rand(n, device=device) < 0.5
    steps = 0
    while steps < a.warmup_steps:
        for idx in batches(n, batch, max(n // a.batch_size, 1), device):
            trainer.step(augment(train_x[idx], flip[idx]), train_y[idx])
            steps += 1
            if steps == a.warmup_steps:
                break
    m = EVAL_CHUNK if device.type == "cuda" else min(batch, EVAL_CHUNK)
    evaluate(model, test_x[:m], test_y[:m], False, bf16)
    evaluate(model, test_x[:m], test_y[:m], True, bf16)
    if device.type == "cuda":
        torch.cuda.synchronize()


def step_time(a, data, device, bf16, emit):
    """ms per training step over a.step_time steps on batches augmented beforehand."""
    train_x, train_y = data[0], data[1]
    n = len(train_y)
    batch = min(a.batch_size, n)
    steps_per_epoch = max(n // a.batch_size, 1)
    total_steps = max(math.ceil(steps_per_epoch * a.epochs), a.step_time)
    torch.manual_seed(a.seed)
    model = make_model(device, bf16)
    init_whitening(model.whiten, train_x[:WHITEN_IMAGES])
    trainer = Trainer(model, total_steps, bf16, a.batch_size)
    flip = torch.rand(n, device=device) < 0.5
    prepared, epoch = [], 0
    while len(prepared) < a.step_time:
        for idx in batches(n, batch, steps_per_epoch, device):
            x = augment(train_x[idx], flip[idx] ^ (epoch % 2 == 1))
            if bf16:
                x = x.contiguous(memory_format=torch.channels_last)
            prepared.append((x, train_y[idx]))
        epoch += 1
    prepared = prepared[:a.step_time]
    clock = Clock(device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    clock.start()
    for x, y in prepared:
        trainer.step(x, y)
    seconds = clock.stop()
    emit({"engine": "torch", "row": "airbench94 step", "batch": batch,
          "ms_per_step": 1e3 * seconds / a.step_time})


# ---------------------------------------------------------------------------- safetensors

ST_DTYPES = {torch.float32: ("F32", np.float32), torch.int64: ("I64", np.int64)}
ST_NUMPY = {tag: np_type for tag, np_type in ST_DTYPES.values()}


def save_safetensors(tensors, path):
    """8-byte little-endian header size, the JSON header, then the raw little-endian data."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu()
        if t.is_floating_point():
            t = t.float()
        tag, np_type = ST_DTYPES[t.dtype]
        raw = np.ascontiguousarray(t.numpy()).astype(np.dtype(np_type).newbyteorder("<"))
        raw = raw.tobytes()
        header[name] = {"dtype": tag, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size].decode("utf-8"))
    header.pop("__metadata__", None)
    data = memoryview(blob)[8 + size:]
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        np_type = np.dtype(ST_NUMPY[e["dtype"]]).newbyteorder("<")
        arr = np.frombuffer(data[begin:end], dtype=np_type).astype(np_type.newbyteorder("="))
        out[name] = torch.from_numpy(arr.copy()).reshape(e["shape"])
    return out


def reference_logits(a, device, bf16):
    """--load/--logits-out: strict load, eval-mode logits with and without TTA."""
    test_x, test_y = load_split(a.data_dir, False, a.limit_test, device)
    model = make_model(device, bf16)
    model.load_state_dict(load_safetensors(a.load), strict=True)
    logits, _ = evaluate(model, test_x, test_y, False, bf16)
    tta_logits, _ = evaluate(model, test_x, test_y, True, bf16)
    save_safetensors({"logits": logits, "tta_logits": tta_logits}, a.logits_out)


# ---------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="cifar-10-batches-bin")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=["float32", "bf16"], default=None,
                    help="default: bf16 on cuda, float32 on cpu")
    ap.add_argument("--epochs", type=float, default=9.9)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="0: PyTorch's default")
    ap.add_argument("--warmup-steps", type=int, default=None,
                    help="default: 20 on cuda, 2 on cpu; 0 skips the warm-up")
    ap.add_argument("--limit-train", type=int, default=0, help="keep the first N (0: all)")
    ap.add_argument("--limit-test", type=int, default=0, help="keep the first N (0: all)")
    ap.add_argument("--step-time", type=int, default=0, metavar="K",
                    help="time K training steps only, then exit")
    ap.add_argument("--save", metavar="FILE", help="write the trained state dict")
    ap.add_argument("--load", metavar="FILE", help="reference mode: weights to load")
    ap.add_argument("--logits-out", metavar="FILE", help="reference mode: logits to write")
    a = ap.parse_args()
    if bool(a.load) != bool(a.logits_out):
        ap.error("--load and --logits-out go together")
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    if a.dtype is None:
        a.dtype = "bf16" if device.type == "cuda" else "float32"
    if a.warmup_steps is None:
        a.warmup_steps = 20 if device.type == "cuda" else 2
    bf16 = a.dtype == "bf16"
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True

    def emit(obj):
        print(json.dumps(obj), flush=True)

    if a.load:
        reference_logits(a, device, bf16)
        return

    data = (*load_split(a.data_dir, True, a.limit_train, device),
            *load_split(a.data_dir, False, a.limit_test, device))
    torch.manual_seed(a.seed)
    warm_up(a, data, device, bf16)
    if a.step_time:
        step_time(a, data, device, bf16, emit)
        return

    accs, times = [], []
    for run in range(a.runs):
        acc, seconds, model = train_run(a, data, run, device, bf16, emit)
        accs.append(acc)
        times.append(seconds)
        emit({"engine": "torch", "run": run, "tta_test_accuracy": acc, "time_s": seconds,
              "epochs": a.epochs, "device": str(device), "dtype": a.dtype})
    if a.save:
        save_safetensors(model.state_dict(), a.save)
    emit({"engine": "torch", "runs": a.runs, "mean_tta_test_accuracy": sum(accs) / len(accs),
          "mean_time_s": sum(times) / len(times)})


if __name__ == "__main__":
    main()
