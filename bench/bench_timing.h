// Timing shared by the C++ benchmarks: the median of repeated calls after a warm-up.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace ignis::bench {

/// Median seconds of one call of fn: `warmup` calls first (so allocations are cached), then
/// at least `min_reps` calls and `min_time` seconds.
inline double time_median(const std::function<void()>& fn, double min_time, int warmup = 2,
                          int min_reps = 5) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  const auto start = clock::now();
  while (int(t.size()) < min_reps ||
         std::chrono::duration<double>(clock::now() - start).count() < min_time) {
    const auto a = clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace ignis::bench
