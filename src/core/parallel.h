// The CPU's one way to split work across threads (OpenMP underneath). Kernels call
// parallel_for with a grain size; below it the work runs inline on the caller's thread,
// so small tensors pay no thread start-up.
#pragma once

#include <algorithm>
#include <cstdint>

#include <omp.h>

namespace ignis::detail {

/// Elements below which an elementwise loop stays on one thread (PyTorch uses the same).
inline constexpr int64_t kGrainSize = 16384;

/// Number of threads parallel_for uses for n items of the given grain (1 inside a parallel
/// region: nested regions run inline).
inline int64_t num_threads_for(int64_t n, int64_t grain) {
  const int64_t max_threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  return std::max<int64_t>(1, std::min<int64_t>(max_threads, (n + grain - 1) / std::max<int64_t>(grain, 1)));
}

/// f(begin, end) over disjoint chunks covering [begin, end). Chunks are contiguous and at
/// least `grain` long, one per thread.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int64_t nthreads = num_threads_for(n, grain);
  if (nthreads <= 1) {
    f(begin, end);
    return;
  }
#pragma omp parallel num_threads(int(nthreads))
  {
    const int64_t t = omp_get_thread_num();
    const int64_t chunk = (n + nthreads - 1) / nthreads;
    const int64_t b = begin + t * chunk;
    const int64_t e = std::min(end, b + chunk);
    if (b < e) f(b, e);
  }
}

}  // namespace ignis::detail
