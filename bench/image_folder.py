"""torchvision's ImageFolder on the tree bench/image_folder.cpp reads, and the tree itself.

  image_folder.py make ROOT [--images N] [--format png|jpg]
      writes N CIFAR-like 32x32 RGB images (smooth colour fields plus noise, so they compress
      like photographs rather than noise) into ROOT/class0 ... class9.
  image_folder.py run ROOT [--workers 0,1,2]
      images/s of a DataLoader (batches of 128, one thread per process, persistent workers,
      after a warm-up epoch) over torchvision.datasets.ImageFolder with the standard
      transform Resize(32) + CenterCrop(32) + PILToTensor: every image decoded by PIL per
      epoch, as torchvision does. One JSON line per worker count.
"""
import argparse
import json
import os
import time

import numpy as np


def make(root, n, fmt):
    from PIL import Image
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:32, 0:32]
    for i in range(n):
        d = os.path.join(root, "class%d" % (i % 10))
        os.makedirs(d, exist_ok=True)
        a, b, c = rng.uniform(-4, 4, 3), rng.uniform(-4, 4, 3), rng.uniform(0, 255, 3)
        img = np.clip(c + a * x[..., None] + b * y[..., None] + rng.normal(0, 12, (32, 32, 3)), 0, 255)
        Image.fromarray(img.astype(np.uint8)).save(os.path.join(d, "%06d.%s" % (i, fmt)))


def run(root, workers_list):
    import torch
    import torchvision.transforms as T
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder
    torch.set_num_threads(1)
    ds = ImageFolder(root, T.Compose([T.Resize(32), T.CenterCrop(32), T.PILToTensor()]))
    for w in workers_list:
        loader = DataLoader(ds, batch_size=128, shuffle=True, num_workers=w,
                            persistent_workers=w > 0,
                            worker_init_fn=(lambda _: torch.set_num_threads(1)) if w else None)
        for _ in loader:
            pass
        t0 = time.perf_counter()
        n = sum(x.shape[0] for x, _ in loader)
        s = time.perf_counter() - t0
        print(json.dumps({"bench": "image_folder", "engine": "torch", "workers": w, "images": n,
                          "seconds": round(s, 4), "images_per_s": round(n / s)}), flush=True)
        del loader


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["make", "run"])
    p.add_argument("root")
    p.add_argument("--images", type=int, default=10000)
    p.add_argument("--format", default="png")
    p.add_argument("--workers", default="0,1,2")
    a = p.parse_args()
    if a.cmd == "make":
        make(a.root, a.images, a.format)
    else:
        run(a.root, [int(w) for w in a.workers.split(",")])
