// All-reduce bandwidth of ignis::distributed on CPU tensors, run under mpirun (e.g.
// `mpirun -np 2 bench/all_reduce`): float32 sums of 4 KiB to 100 MiB through Ignis (a blocking
// MPI_Allreduce on the group's worker thread behind a Work, Note [MPI worker threads]) and, as
// the peer in the same run, a plain blocking MPI_Allreduce on the same buffer. Rank 0 prints one JSON line per size and engine: median
// seconds, algorithm bandwidth (bytes / time) and bus bandwidth (x 2(n-1)/n, the bytes each
// rank sends and receives in a ring; the nccl-tests convention). all_reduce.py is the PyTorch
// (gloo) peer.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "ignis/distributed.h"
#include "ignis/ops.h"

namespace dist = ignis::distributed;

// Median seconds of fn. Every rank must call fn the same number of times (each call is a
// collective), so rank 0's estimate of the repetitions fitting in min_time is broadcast.
double time_collective(const std::function<void()>& fn, double min_time) {
  using clock = std::chrono::steady_clock;
  auto once = [&] {
    auto a = clock::now();
    fn();
    return std::chrono::duration<double>(clock::now() - a).count();
  };
  once();
  double first = once();
  ignis::Tensor reps = ignis::full({1}, double(std::clamp(int(min_time / first), 5, 10000)),
                                   ignis::kInt32);
  dist::broadcast(reps, 0);
  std::vector<double> t;
  for (int i = 0; i < reps.item<int>(); ++i) t.push_back(once());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  dist::init();
  ignis::set_num_threads(1);
  const int n = dist::world_size();
  for (int64_t bytes : {int64_t(4) << 10, int64_t(1) << 20, int64_t(25) << 20,
                        int64_t(100) << 20}) {
    ignis::Tensor t = ignis::ones({bytes / 4});
    const double min_time = 1.0;
    double ignis_s = time_collective([&] { dist::all_reduce(t); }, min_time);
    double mpi_s = time_collective(
        [&] {
          MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), int(t.numel()), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        },
        min_time);
    if (dist::rank() != 0) continue;
    for (auto [engine, s] : {std::pair{"ignis", ignis_s}, std::pair{"mpi_allreduce", mpi_s}}) {
      double algbw = double(bytes) / s / 1e9;
      std::printf(
          "{\"bench\": \"all_reduce\", \"engine\": \"%s\", \"ranks\": %d, \"bytes\": %lld, "
          "\"seconds\": %.6g, \"algbw_GBps\": %.3f, \"busbw_GBps\": %.3f}\n",
          engine, n, (long long)bytes, s, algbw, algbw * 2.0 * (n - 1) / n);
    }
    std::fflush(stdout);
  }
  dist::destroy();
}
