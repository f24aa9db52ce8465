#!/bin/sh
# `ignis bench` on the CPU with tiny timings: the forward FLOP counts it prints must equal the
# hand counts of the models' layers (and, for ResNet-18, what PyTorch's own modules give when
# PYTHON has torch and torchvision); the table must have one CPU row per model and batch size
# with positive throughputs, memory and TFLOP/s figures.
# Usage: bench.sh IGNIS WORK [PYTHON]
set -eu
bin=$1 work=$2 py=${3:-}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$bin" bench --model mlp,cnn --batch-sizes 4,8 --seconds 0.01 >out.txt
cat out.txt
python3 - <<'PY'
import re
out = open("out.txt").read()
flops = dict(re.findall(r"^  (\w+) +(\d+)$", out, re.M))
# 1x28x28 inputs, 10 classes. MLP: 784 -> 512 -> 10. CNN: 3x3 conv 1 -> 32 at 28x28,
# 3x3 conv 32 -> 64 at 14x14, fc 64*7*7 -> 128, fc 128 -> 10. FLOPs = 2 x multiply-adds.
mlp = 2 * (28 * 28 * 512 + 512 * 10)
cnn = 2 * (28 * 28 * 32 * 1 * 9 + 14 * 14 * 64 * 32 * 9 + 64 * 7 * 7 * 128 + 128 * 10)
assert int(flops["mlp"]) == mlp, (flops, mlp)
assert int(flops["cnn"]) == cnn, (flops, cnn)
rows = re.findall(r"^cpu +(\w+) +(\d+) +(\S+) +(\S+) +- +- +(\S+) +(\S+) +(\S+) +(\S+) +(\S+)$", out, re.M)
assert [(r[0], r[1]) for r in rows] == [("mlp", "4"), ("mlp", "8"), ("cnn", "4"), ("cnn", "8")], rows
for r in rows:
    # throughputs, TFLOP/s and % of peak are positive; memory growth is at least 0
    assert all(float(v) > 0 for v in r[2:4] + r[5:]) and float(r[4]) >= 0, r
assert re.search(r"^cpu fp32 peak [0-9.]+ TFLOP/s", out, re.M)
print(f"ok: FLOPs mlp {mlp}, cnn {cnn}; {len(rows)} rows")
PY
if [ -n "$py" ] && "$py" -c 'import torch, torchvision' 2>/dev/null; then
  "$bin" bench --model resnet18 --batch-sizes 1 --seconds 0.01 >resnet.txt
  "$py" - <<'PY'
import re, torch, torchvision
# torchvision's ResNet-18 with the CIFAR stem (3x3 conv, no max-pool) on 1x28x28, 10 classes;
# multiply-adds counted from each conv and linear layer's actual output size.
m = torchvision.models.resnet18(num_classes=10)
m.conv1 = torch.nn.Conv2d(1, 64, 3, 1, 1, bias=False)
m.maxpool = torch.nn.Identity()
macs = []
def hook(mod, inp, out):
    if isinstance(mod, torch.nn.Conv2d):
        macs.append(out[0].numel() * mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1])
    elif isinstance(mod, torch.nn.Linear):
        macs.append(mod.in_features * mod.out_features)
for mod in m.modules():
    mod.register_forward_hook(hook)
m(torch.zeros(1, 1, 28, 28))
got = int(re.search(r"^  resnet18 +(\d+)$", open("resnet.txt").read(), re.M).group(1))
assert got == 2 * sum(macs), (got, 2 * sum(macs))
print(f"ok: ResNet-18 forward FLOPs {got} as counted through PyTorch")
PY
else
  echo "note: no torch/torchvision for the ResNet-18 count"
fi
