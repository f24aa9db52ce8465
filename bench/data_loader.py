"""PyTorch's DataLoader on the work of bench/data_loader.cpp: CIFAR-shaped uint8 images
[3, 32, 32] (20,000 by default), shuffled batches of 128, each made float (x / 255),
normalised per channel, randomly cropped to 32x32 from a zero padding of 4 and flipped
horizontally with p = 0.5; images/s for 0, 1 and 2 worker processes after a warm-up epoch
(persistent workers, so their start is not timed), one thread per process as in Ignis.

Two ways of doing the work, each a row:
  batched     PyTorch at its best: the sampler yields whole batches of indices; the data set
              gathers a batch with one index and transforms it with batched tensor ops (one
              gather does crop + flip, as Ignis's kernel does). The fair comparison.
  per_sample  the usual torchvision recipe: per-image RandomCrop(32, padding=4),
              RandomHorizontalFlip, float conversion and Normalize on tensors, collated by
              the default collate_fn. For reference.
One JSON line per row. Options: --images N, --epochs E, --variants batched,per_sample.
"""
import argparse
import json
import time

import torch
import torchvision.transforms as T
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

MEAN = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
STD = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
ROWS = torch.arange(32).view(1, 1, 32, 1)
COLS = torch.arange(32).view(1, 1, 1, 32)
CHANNELS = torch.arange(3).view(1, 3, 1, 1) * 1600  # 40 x 40 padded planes


class BatchedCifar(Dataset):
    """Indexed by a list of indices (a whole batch); returns the transformed batch."""

    def __init__(self, images, labels, seed):
        self.images, self.labels = images, labels
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        idx = torch.as_tensor(idx)
        x = self.images[idx].float().div_(255).sub_(MEAN).div_(STD)
        b = x.shape[0]
        x = torch.nn.functional.pad(x, (4, 4, 4, 4))  # [b, 3, 40, 40]
        top = torch.randint(0, 9, (b, 1, 1, 1), generator=self.gen)
        left = torch.randint(0, 9, (b, 1, 1, 1), generator=self.gen)
        flip = torch.rand(b, 1, 1, 1, generator=self.gen) < 0.5
        # One gather for crop + flip: the flat index of every output pixel in the padded batch
        # (the fastest of the batched forms tried: advanced indexing, two torch.gather calls,
        # and a per-sample slicing loop were 1.4-3x slower).
        cols = torch.where(flip, 31 - COLS, COLS)
        flat = torch.arange(b).view(b, 1, 1, 1) * 4800 + CHANNELS + (top + ROWS) * 40 + left + cols
        x = x.view(-1).index_select(0, flat.view(-1)).view(b, 3, 32, 32)
        return x, self.labels[idx]


class PerSampleCifar(Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels
        self.tf = T.Compose([
            T.RandomCrop(32, padding=4),
            T.RandomHorizontalFlip(),
            T.ConvertImageDtype(torch.float32),
            T.Normalize(MEAN.flatten().tolist(), STD.flatten().tolist()),
        ])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.tf(self.images[i]), self.labels[i]


def worker_init(_):
    torch.set_num_threads(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--images", type=int, default=20000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", default="0,1,2")
    p.add_argument("--variants", default="batched,per_sample")
    a = p.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    images = torch.randint(0, 256, (a.images, 3, 32, 32), dtype=torch.uint8, generator=g)
    labels = torch.randint(0, 10, (a.images,), generator=g)
    for variant in a.variants.split(","):
        for workers in [int(w) for w in a.workers.split(",")]:
            common = dict(num_workers=workers, persistent_workers=workers > 0,
                          worker_init_fn=worker_init if workers > 0 else None)
            if workers > 0:
                common["prefetch_factor"] = 2
            if variant == "batched":
                sampler = BatchSampler(RandomSampler(range(a.images)), 128, drop_last=False)
                loader = DataLoader(BatchedCifar(images, labels, 0), sampler=sampler,
                                    batch_size=None, **common)
            else:
                loader = DataLoader(PerSampleCifar(images, labels), batch_size=128, shuffle=True,
                                    **common)
            for _ in loader:  # warm-up epoch (and worker start)
                pass
            t0 = time.perf_counter()
            n = 0
            for _ in range(a.epochs):
                for x, _y in loader:
                    n += x.shape[0]
            s = time.perf_counter() - t0
            print(json.dumps({"bench": "data_loader", "engine": "torch", "variant": variant,
                              "workers": workers, "batch": 128, "images": n,
                              "seconds": round(s, 4), "images_per_s": round(n / s)}), flush=True)
            del loader


if __name__ == "__main__":
    main()
