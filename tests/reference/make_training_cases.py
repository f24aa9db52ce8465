#!/usr/bin/env python3
"""PyTorch's answers for the training reference suite (test_training_reference.cpp).

Usage: make_training_cases.py --out DIR   (writes DIR/training.json and DIR/training_*.bin)

For each model (the MLP, the small CNN, ResNet-18 with the CIFAR stem) built from fixed
seeds, it records what one training step and three optimizer steps give, so that Ignis,
starting from the same weights and batch, can be checked value by value:
  initial    the state dict (parameters AND buffers, PyTorch's names and order)
  input, target, logits, loss (cross entropy, mean), grads (every parameter after one backward)
  buffers    the buffers after that one train-mode forward (BatchNorm running stats)
  optim      per optimizer: its options, dtype and the state dict after 3 steps, each step
             being zero_grad / forward / cross entropy / backward / step on the same batch,
             starting again from the initial weights for each optimizer (the dtype is float64
             for Adam, AdamW and RMSprop: see OPTIMIZER_DTYPE)
Models stay in train mode throughout, so BatchNorm normalises with batch statistics and its
running stats move (they are part of the compared state dicts).

The schedulers part lists, per scheduler, its options and the lr (and for OneCycleLR the
momentum) at construction and after each of 100 steps; ReduceLROnPlateau gets a fixed metric
sequence, recorded too.

Format: training_<model>.bin holds one model's tensors' raw little-endian bytes back to back
(one file per model so that a test process reads only its model's; ResNet-18's is ~300 MB:
seven full state dicts). In training.json a tensor is {"dtype": "float32"|"float64"|"int64", "shape":
[...], "file": "training_<model>.bin", "offset": bytes into that file} and a named tensor list
is [[name, tensor], ...] in PyTorch's order.
"""
import argparse
import json
import os
import warnings

import torch
import torch.nn as tnn
import torch.nn.functional as F
import torchvision

DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64"}


class Blob:
    """Collects the bytes of one .bin file; put() returns the JSON spec of a tensor."""

    def __init__(self, file):
        self.file, self.parts, self.size = file, [], 0

    def put(self, t):
        t = t.detach().contiguous().cpu()
        data = t.numpy().tobytes()
        spec = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "file": self.file,
                "offset": self.size}
        self.parts.append(data)
        self.size += len(data)
        return spec

    def named(self, items):
        return [[k, self.put(v)] for k, v in items]


# ------------------------------------------------------------------ models ----------------
class MLP(tnn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = tnn.Linear(10, 512), tnn.Linear(512, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class SmallCNN(tnn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = tnn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = tnn.Conv2d(32, 64, 3, padding=1)
        self.fc1, self.fc2 = tnn.Linear(64 * 7 * 7, 128), tnn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def resnet18_cifar():
    m = torchvision.models.resnet18(num_classes=10)
    m.conv1 = tnn.Conv2d(3, 64, 3, 1, 1, bias=False)
    m.maxpool = tnn.Identity()
    # Freshly initialised BatchNorms are (1, 0); random affine parameters and running stats
    # make the check see that Ignis uses each of them where PyTorch does.
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, tnn.BatchNorm2d):
                mod.weight.copy_(torch.rand(mod.weight.shape, generator=g) + 0.5)
                mod.bias.copy_(torch.randn(mod.bias.shape, generator=g) * 0.1)
                mod.running_mean.copy_(torch.randn(mod.running_mean.shape, generator=g) * 0.1)
                mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=g) + 0.5)
                mod.num_batches_tracked.fill_(3)
    return m


# name -> (constructor, input shape); inputs are randn, targets uniform class indices.
MODELS = {
    "MLP": (MLP, [16, 10]),
    "SmallCNN": (SmallCNN, [8, 1, 28, 28]),
    "ResNet18": (resnet18_cifar, [4, 3, 16, 16]),
}

# name -> (options recorded for the C++ side, factory). The options exercise the non-default
# paths: momentum + Nesterov + weight decay, L2 vs decoupled decay, centered RMSprop with
# momentum, Adagrad's lr decay and initial accumulator.
OPTIMIZERS = {
    "SGD": {"lr": 0.05, "momentum": 0.9, "dampening": 0.0, "weight_decay": 5e-4, "nesterov": True},
    "Adam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 1e-4},
    "AdamW": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 1e-2},
    "RMSprop": {"lr": 1e-3, "alpha": 0.99, "eps": 1e-8, "weight_decay": 1e-4, "momentum": 0.5,
                "centered": True},
    "Adagrad": {"lr": 1e-2, "lr_decay": 1e-3, "weight_decay": 1e-4,
                "initial_accumulator_value": 0.1, "eps": 1e-10},
}


# Adam, AdamW and RMSprop divide each gradient element by its own running RMS, so on step 1
# an element moves by about lr * sign(g) however small g is: the last-bit rounding of
# near-zero gradients (which any two float32 implementations differ in, being free to sum in
# different orders) turns into parameter differences of order lr. PyTorch's own float32 run
# differs from its float64 run that much (SmallCNN Adam: 1.9e-5, ResNet-18 RMSprop: 6.6e-2),
# so no float32 tolerance can check these three tightly. They run in float64 on both sides,
# where the same comparison agrees to ~1e-11; SGD and Adagrad run in float32.
OPTIMIZER_DTYPE = {"SGD": torch.float32, "Adam": torch.float64, "AdamW": torch.float64,
                   "RMSprop": torch.float64, "Adagrad": torch.float32}


def make_optimizer(name, params, o):
    if name == "SGD":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o["momentum"], dampening=o["dampening"],
                               weight_decay=o["weight_decay"], nesterov=o["nesterov"])
    if name in ("Adam", "AdamW"):
        cls = torch.optim.Adam if name == "Adam" else torch.optim.AdamW
        return cls(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                   weight_decay=o["weight_decay"])
    if name == "RMSprop":
        return torch.optim.RMSprop(params, lr=o["lr"], alpha=o["alpha"], eps=o["eps"],
                                   weight_decay=o["weight_decay"], momentum=o["momentum"],
                                   centered=o["centered"])
    return torch.optim.Adagrad(params, lr=o["lr"], lr_decay=o["lr_decay"],
                               weight_decay=o["weight_decay"],
                               initial_accumulator_value=o["initial_accumulator_value"],
                               eps=o["eps"])


def model_case(blob, name, seed):
    ctor, shape = MODELS[name]
    torch.manual_seed(seed)
    model = ctor().train()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(shape)
    y = torch.randint(0, 10, (shape[0],))
    out = {"initial": blob.named(initial.items()), "input": blob.put(x), "target": blob.put(y)}

    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    out["logits"], out["loss"] = blob.put(logits), blob.put(loss)
    out["grads"] = blob.named((k, p.grad) for k, p in model.named_parameters())
    out["buffers"] = blob.named((k, b) for k, b in model.named_buffers())

    out["optim"] = {}
    for opt_name, o in OPTIMIZERS.items():
        dt = OPTIMIZER_DTYPE[opt_name]
        model.load_state_dict(initial)
        model.to(dt)  # floating parameters and buffers only
        opt = make_optimizer(opt_name, model.parameters(), o)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(x.to(dt)), y).backward()
            opt.step()
        out["optim"][opt_name] = {"options": o, "dtype": DTYPES[dt],
                                  "after": blob.named(model.state_dict().items())}
        model.float()
    return out


# ------------------------------------------------------------------ schedulers ------------
# name -> (options for the C++ side, factory(optimizer)); each runs on an SGD optimizer with
# lr 0.1 and momentum 0.9 (OneCycleLR cycles the momentum).
def _sequential(opt, o):
    a = torch.optim.lr_scheduler.LinearLR(opt, start_factor=o["warmup_start_factor"],
                                          total_iters=o["warmup_iters"])
    b = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=o["T_max"], eta_min=o["eta_min"])
    return torch.optim.lr_scheduler.SequentialLR(opt, [a, b], milestones=[o["milestone"]])


LRS = torch.optim.lr_scheduler
SCHEDULERS = {
    "StepLR": ({"step_size": 7, "gamma": 0.5},
               lambda opt, o: LRS.StepLR(opt, o["step_size"], o["gamma"])),
    "MultiStepLR": ({"milestones": [10, 25, 60], "gamma": 0.3},
                    lambda opt, o: LRS.MultiStepLR(opt, o["milestones"], o["gamma"])),
    "ExponentialLR": ({"gamma": 0.95}, lambda opt, o: LRS.ExponentialLR(opt, o["gamma"])),
    # T_max < 100: the sequence goes past T_max (PyTorch's recursion is periodic there).
    "CosineAnnealingLR": ({"T_max": 30, "eta_min": 0.001},
                          lambda opt, o: LRS.CosineAnnealingLR(opt, o["T_max"], o["eta_min"])),
    # total_steps 101: 100 steps after construction reach its last epoch.
    "OneCycleLR": ({"max_lr": 1.0, "total_steps": 101, "pct_start": 0.3, "anneal": "cos",
                    "three_phase": False},
                   lambda opt, o: LRS.OneCycleLR(opt, o["max_lr"], total_steps=o["total_steps"],
                                                 pct_start=o["pct_start"],
                                                 anneal_strategy=o["anneal"],
                                                 three_phase=o["three_phase"])),
    "OneCycleLR_linear_three_phase": (
        {"max_lr": 0.5, "total_steps": 101, "pct_start": 0.25, "anneal": "linear",
         "three_phase": True},
        lambda opt, o: LRS.OneCycleLR(opt, o["max_lr"], total_steps=o["total_steps"],
                                      pct_start=o["pct_start"], anneal_strategy=o["anneal"],
                                      three_phase=o["three_phase"])),
    "LinearLR": ({"start_factor": 0.25, "end_factor": 1.0, "total_iters": 20},
                 lambda opt, o: LRS.LinearLR(opt, o["start_factor"], o["end_factor"],
                                             o["total_iters"])),
    "SequentialLR": ({"warmup_start_factor": 0.1, "warmup_iters": 10, "milestone": 10,
                      "T_max": 90, "eta_min": 0.0}, _sequential),
}

# A metric that falls, stalls, falls again and wobbles: reductions, cooldown and the
# relative threshold all come into play.
PLATEAU_METRICS = [max(0.3, 1.0 - 0.04 * i) + 0.002 * ((7 * i) % 5) + (0.25 if 60 <= i < 70 else 0)
                   for i in range(100)]
PLATEAU = {
    "ReduceLROnPlateau_min_rel": {"mode": "min", "factor": 0.5, "patience": 3, "threshold": 1e-2,
                                  "threshold_mode": "rel", "cooldown": 2, "min_lr": 1e-3,
                                  "eps": 1e-8},
    "ReduceLROnPlateau_max_abs": {"mode": "max", "factor": 0.2, "patience": 2, "threshold": 0.01,
                                  "threshold_mode": "abs", "cooldown": 0, "min_lr": 0.0,
                                  "eps": 1e-8},
}


def scheduler_cases():
    def sgd():
        return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)

    out = {}
    for name, (o, make) in SCHEDULERS.items():
        opt = sgd()
        sch = make(opt, o)
        lrs, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
        for _ in range(100):
            opt.step()
            sch.step()
            lrs.append(opt.param_groups[0]["lr"])
            moms.append(opt.param_groups[0]["momentum"])
        out[name] = {"options": o, "lr": lrs, "momentum": moms}
    for name, o in PLATEAU.items():
        opt = sgd()
        sch = LRS.ReduceLROnPlateau(opt, mode=o["mode"], factor=o["factor"], patience=o["patience"],
                                    threshold=o["threshold"], threshold_mode=o["threshold_mode"],
                                    cooldown=o["cooldown"], min_lr=o["min_lr"], eps=o["eps"])
        lrs = [opt.param_groups[0]["lr"]]
        for m in PLATEAU_METRICS:
            opt.step()
            sch.step(m)
            lrs.append(opt.param_groups[0]["lr"])
        out[name] = {"options": o, "lr": lrs, "metrics": PLATEAU_METRICS}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic reductions, and leaves the other core free
    # SequentialLR steps its schedulers with an explicit epoch, which 1.13 warns about.
    warnings.filterwarnings("ignore", category=UserWarning, module="torch.optim.lr_scheduler")
    os.makedirs(args.out, exist_ok=True)
    doc = {"version": 1, "torch": torch.__version__, "torchvision": torchvision.__version__,
           "models": {}, "schedulers": scheduler_cases()}
    for seed, name in enumerate(MODELS):
        blob = Blob("training_%s.bin" % name)
        doc["models"][name] = model_case(blob, name, seed)
        with open(os.path.join(args.out, blob.file), "wb") as f:
            for p in blob.parts:
                f.write(p)
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
