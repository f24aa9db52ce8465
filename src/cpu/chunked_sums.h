// Helpers shared by the normalisation kernels (src/cpu/batch_norm.cpp, src/cpu/row_norm.cpp)
// that reduce into per-channel or per-column totals in parallel: each parallel chunk owns a
// slice of a partial-sum buffer allocated before the region, and the slices are summed after
// it in chunk order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "ignis/tensor.h"

namespace ignis::cpu {

/// t's data as T*, or null when t is undefined (an absent weight, bias or output).
template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

/// parallel_for over [0, n) that also tells f its chunk number (< chunks_for(n, grain)), so
/// each chunk can own a slice of a partial-sum buffer allocated before the parallel region.
inline int64_t chunks_for(int64_t n, int64_t grain) { return detail::num_threads_for(n, grain); }
template <class F>
void parallel_chunks(int64_t n, int64_t grain, const F& f) {
  const int64_t nt = chunks_for(n, grain);
  const int64_t chunk = (n + nt - 1) / std::max<int64_t>(nt, 1);
  detail::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { f(b / chunk, b, e); });
}

/// Sums over chunks: acc[k][j] for k < chunks, into out[j].
inline void reduce_chunks(
    const std::vector<double>& acc, int64_t chunks, int64_t width, double* out) {
  for (int64_t j = 0; j < width; ++j) out[j] = 0;
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t j = 0; j < width; ++j) out[j] += acc[size_t(k * width + j)];
}

}  // namespace ignis::cpu
