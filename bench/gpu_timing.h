// Timing shared by the GPU benchmarks: the median of repeated calls measured with CUDA events
// on the current stream (so queued work is timed, not the host's launch loop).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "ignis/cuda.h"

namespace ignis::bench {

/// Median milliseconds of one call of fn on the GPU: 3 warm-up calls, then `reps` timed ones.
inline double gpu_median_ms(const std::function<void()>& fn, int reps = 20) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    cuda::Event start(true), stop(true);
    start.record();
    fn();
    stop.record();
    stop.synchronize();
    t.push_back(start.elapsed_time(stop));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace ignis::bench
