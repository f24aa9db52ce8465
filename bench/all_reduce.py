"""The PyTorch peer of bench/all_reduce: float32 all_reduce sums of the same sizes over the gloo
backend (Debian's python3-torch has no MPI backend), two processes on this machine; rank 0
prints JSON lines in the same format. Usage: python3 bench/all_reduce.py [ranks]."""
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def time_collective(fn, min_time=1.0):
    """Median seconds of fn; every rank runs rank 0's repetition count (fn is a collective)."""
    def once():
        a = time.perf_counter()
        fn()
        return time.perf_counter() - a
    once()
    reps = torch.tensor([min(10000, max(5, int(min_time / once())))])
    dist.broadcast(reps, 0)
    return statistics.median(once() for _ in range(int(reps)))


def run(rank, n, init_file):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=n)
    for nbytes in (4 << 10, 1 << 20, 25 << 20, 100 << 20):
        t = torch.ones(nbytes // 4)
        s = time_collective(lambda: dist.all_reduce(t))
        if rank == 0:
            algbw = nbytes / s / 1e9
            print(json.dumps({"bench": "all_reduce", "engine": "torch_gloo", "ranks": n,
                              "bytes": nbytes, "seconds": s, "algbw_GBps": round(algbw, 3),
                              "busbw_GBps": round(algbw * 2 * (n - 1) / n, 3)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(run, args=(n, os.path.join(d, "init")), nprocs=n)
