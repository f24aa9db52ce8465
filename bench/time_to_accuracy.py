#!/usr/bin/env python3
"""PyTorch twin of `ignis train`'s recipe on Fashion-MNIST, for the time-to-accuracy row.

The recipe is the one `ignis train --model cnn --data fashion-mnist` runs (apps/ignis/train.cpp,
resolve_defaults and make_schedule): the train and test files pooled (70,000 images) and split
70/10/20 at random; inputs scaled to [0, 1] and normalised by the training part's mean and std;
models::SmallCNN (written out in train_models.py); batch 128, reshuffled every epoch; SGD with
Nesterov momentum 0.9 and weight decay 5e-4 under a one-cycle schedule (peak lr 0.05, 30% rising,
momentum cycled 0.9 -> 0.8 -> 0.9, stepped per batch); validation after every epoch; the test
set scored with the weights of the best validation epoch. The data are held as one uint8 tensor
and batched by index (PyTorch at its best: no per-sample DataLoader).

After the first training step it prints {"engine": "torch", "row": "start-up to first step",
"seconds": ...}, counted from the process's start as `ignis train --profile-startup` counts it
(with --startup-only it stops there). Then one JSON line per epoch ({"engine": "torch", "epoch": ..., "val_accuracy": ...,
"seconds": since the process started}) and a last one with "test_accuracy" and "wall_time_s".

Usage: time_to_accuracy.py [--epochs N] [--model cnn|resnet18] [--device cpu|cuda]
                           [--data-dir DIR] [--threads N] [--seed S] [--augment none|standard]
                           [--startup-only]
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from train_models import SmallCNN, resnet18_cifar


def seconds_since_process_start():
    """As `ignis train --profile-startup` counts: from the kernel's start time of the process."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start = float(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of the whole line
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


def read_idx(path):
    """An idx file (gzip'd): uint8 images [N, 1, 28, 28] or labels [N]."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
    return torch.from_numpy(data.copy())


def load_pool(root):
    images = torch.cat([read_idx(f"{root}/train-images-idx3-ubyte.gz"),
                        read_idx(f"{root}/t10k-images-idx3-ubyte.gz")]).unsqueeze(1)
    labels = torch.cat([read_idx(f"{root}/train-labels-idx1-ubyte.gz"),
                        read_idx(f"{root}/t10k-labels-idx1-ubyte.gz")]).long()
    return images, labels


def split(n, seed):
    """70/10/20 index parts, as torch.utils.data.random_split sizes them."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    a, b = int(0.7 * n), int(0.1 * n)
    return perm[:a], perm[a:a + b], perm[a + b:]


def random_crop(x, pad):
    """`ignis train --augment standard` on grey images: each sample's window of its own size,
    at a uniform offset in the image zero-padded by `pad` (in [0, 1] units, before
    normalisation, as RandomCrop then Normalize do). No flip: Ignis flips colour images only."""
    n, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad))
    top = torch.randint(0, 2 * pad + 1, (n, 1, 1), device=x.device)
    left = torch.randint(0, 2 * pad + 1, (n, 1, 1), device=x.device)
    rows = top + torch.arange(h, device=x.device).view(1, h, 1)
    cols = left + torch.arange(w, device=x.device).view(1, 1, w)
    # Advanced indices apart from the channel slice come first: [n, h, w, c].
    return padded[torch.arange(n, device=x.device).view(n, 1, 1), :, rows, cols].permute(0, 3, 1, 2)


def evaluate(model, images, labels, batch, mean, std, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for lo in range(0, len(labels), batch):
            x = (images[lo:lo + batch].to(device).float() / 255 - mean) / std
            correct += (model(x).argmax(1) == labels[lo:lo + batch].to(device)).sum().item()
    model.train()
    return correct / max(len(labels), 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--model", choices=["cnn", "resnet18"], default="cnn")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--threads", type=int, default=0, help="0: PyTorch's default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--augment", choices=["none", "standard"], default="none",
                    help="standard: random crop, padding 4 (as ignis train --augment standard)")
    ap.add_argument("--startup-only", action="store_true")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    images, labels = load_pool(a.data_dir)
    tr, va, te = split(len(labels), a.seed)
    train_x = images[tr]
    mean = train_x.double().mean().item() / 255
    std = max(train_x.double().std(unbiased=False).item(), 1.0) / 255
    model = (SmallCNN() if a.model == "cnn" else resnet18_cifar(in_channels=1)).to(dev)
    batch = 128
    steps_per_epoch = (len(tr) + batch - 1) // batch
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                          weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.05, total_steps=a.epochs * steps_per_epoch + 1, pct_start=0.3,
        base_momentum=0.8, max_momentum=0.9)
    train_y = labels[tr]
    best, best_state = -1.0, None
    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(len(tr))
        for lo in range(0, len(tr), batch):
            idx = order[lo:lo + batch]
            x = train_x[idx].to(dev).float() / 255
            if a.augment == "standard":
                x = random_crop(x, 4)
            x = (x - mean) / std
            loss = F.cross_entropy(model(x), train_y[idx].to(dev))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            if epoch == 1 and lo == 0:
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                print(json.dumps({"engine": "torch", "device": dev.type,
                                  "row": "start-up to first step",
                                  "seconds": seconds_since_process_start()}), flush=True)
                if a.startup_only:
                    return
        acc = evaluate(model, images[va], labels[va], 2 * batch, mean, std, dev)
        if acc > best:
            best, best_state = acc, {k: v.clone() for k, v in model.state_dict().items()}
        print(json.dumps({"engine": "torch", "epoch": epoch, "val_accuracy": acc,
                          "seconds": seconds_since_process_start()}), flush=True)
    model.load_state_dict(best_state)
    test = evaluate(model, images[te], labels[te], 2 * batch, mean, std, dev)
    print(json.dumps({"engine": "torch", "epochs": a.epochs, "model": a.model,
                      "test_accuracy": test, "wall_time_s": seconds_since_process_start(),
                      "torch": torch.__version__, "threads": torch.get_num_threads()}),
          flush=True)


if __name__ == "__main__":
    main()
