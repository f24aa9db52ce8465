#!/usr/bin/env python3
"""PyTorch's side of test_airbench_reference.cpp: Ignis's AirbenchNet against the PyTorch
twin of bench/airbench_torch.py.

Usage: airbench_reference.py (--dir DIR | --steps DIR) --bench BENCH_DIR

Reads DIR/ignis_airbench.safetensors (the model Ignis saved) strictly into the twin's
AirbenchNet and checks, on the input in DIR/ignis_io.safetensors, the eval-mode logits and the
level-2 test-time-augmented logits against Ignis's; then whitens the images stored there with
the twin's init_whitening (torch.linalg.eigh) and checks Ignis's filters against those, each
filter up to its sign (an eigenvector's sign is arbitrary). With --steps DIR instead: the
twin's Trainer takes the steps Ignis's Airbench94Trainer took, from the same weights on the
same batches, and must end with the same losses and state. Exits non-zero on any mismatch.
"""
import argparse
import sys

import torch


def load_model(twin, path):
    """The twin's AirbenchNet with the weights of `path` (strict), in float32."""
    model = twin.AirbenchNet()
    model.load_state_dict(twin.load_safetensors(path), strict=True)
    return model


def compare_steps(twin, folder):
    """--steps: the twin's Trainer from Ignis's initial weights over the same batches must
    give Ignis's per-step losses and final weights and statistics."""
    io = twin.load_safetensors(f"{folder}/ignis_steps_io.safetensors")
    steps = sum(1 for k in io if k.startswith("x"))
    model = load_model(twin, f"{folder}/ignis_initial.safetensors")
    model.train()
    trainer = twin.Trainer(model, steps, False, int(io["decay_batch"][0]))
    losses = []
    for i in range(steps):
        loss, _, done = trainer.step(io[f"x{i}"], io[f"y{i}"].long())
        losses.append(loss.item())
        assert done == (i == steps - 1), (i, done)
    want = io["losses"].double()
    got = torch.tensor(losses, dtype=torch.float64)
    loss_err = ((got - want).abs() / want.abs()).max().item()
    print(f"losses of {steps} steps: worst relative difference {loss_err:.3g}")
    final = twin.load_safetensors(f"{folder}/ignis_final.safetensors")
    worst, where = 0.0, ""
    for name, theirs in model.state_dict().items():
        if not theirs.is_floating_point():
            if not torch.equal(theirs, final[name]):
                print(f"MISMATCH: {name} {theirs} vs {final[name]}")
                sys.exit(1)
            continue
        ours = final[name].float()
        err = ((ours - theirs).abs() / (theirs.abs() + 1e-3)).max().item()
        if err > worst:
            worst, where = err, name
    print(f"final state: worst relative difference {worst:.3g} ({where})")
    if not (loss_err < 1e-4 and worst < 1e-3):
        print("MISMATCH: the recipe's steps differ")
        sys.exit(1)
    print("ok: Ignis's airbench94 steps match the PyTorch twin's")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir")
    parser.add_argument("--steps", help="folder of the recipe-steps case")
    parser.add_argument("--bench", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.bench)
    import airbench_torch as twin  # noqa: E402 (found through --bench)

    if args.steps:
        compare_steps(twin, args.steps)
        return

    torch.manual_seed(0)
    state = twin.load_safetensors(f"{args.dir}/ignis_airbench.safetensors")
    io = twin.load_safetensors(f"{args.dir}/ignis_io.safetensors")
    model = twin.AirbenchNet().double()
    model.load_state_dict({k: v.double() if v.is_floating_point() else v
                           for k, v in state.items()}, strict=True)
    model.eval()
    x = io["input"].double()
    failures = []

    def check(name, got, want, tol):
        err = (got.float() - want.float()).abs().max().item()
        scale = want.abs().max().item()
        print(f"{name}: max abs difference {err:.3g} (largest value {scale:.3g})")
        if not err <= tol * scale:
            failures.append(name)

    with torch.no_grad():
        check("logits", model(x), io["logits"], 1e-4)
        check("tta logits", twin.predict(model, x, True, False), io["tta_logits"], 1e-4)

    conv = torch.nn.Conv2d(3, 24, 2).double()
    twin.init_whitening(conv, io["whiten_images"].double())
    ours, theirs = io["whiten_weight"].double().reshape(24, -1), conv.weight.reshape(24, -1)
    sign = torch.sign((ours * theirs).sum(1, keepdim=True))
    check("whitening filters (up to sign)", ours * sign, theirs, 1e-4)
    if (sign[:12] != sign[12:]).any():  # the negated half must flip with its partner
        failures.append("whitening halves")
    if failures:
        print("MISMATCH:", ", ".join(failures))
        sys.exit(1)
    print("ok: Ignis's AirbenchNet matches the PyTorch twin")


if __name__ == "__main__":
    main()
