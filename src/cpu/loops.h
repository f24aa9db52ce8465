// Walking an ElementwisePlan on the CPU. cpu_for_each splits the flattened index range into
// per-thread chunks (parallel_for) and calls the loop body once per run of the innermost
// dimension with the operands' addresses and inner strides (in elements):
//   body(char* const* ptrs, const int64_t* inner_strides, int64_t count)
// The body decides its own fast paths (all strides 1, a stride-0 broadcast operand …).
// Bodies must not throw: they run inside OpenMP regions.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "core/iterator.h"
#include "core/parallel.h"

namespace ignis::cpu {

using detail::ElementwisePlan;
using detail::kMaxOperands;
using detail::kMaxPlanDims;

/// Calls body(ptrs, inner_strides, count) for the runs of plan positions [begin, end), in
/// row-major order, on the calling thread.
template <class Plan, class Body>
void walk_range(const Plan& p, int64_t begin, int64_t end, const Body& body) {
  constexpr int kOps = Plan::kMaxOperands;
  if (begin >= end) return;
  const int nops = p.noperands;
  int64_t item[kOps];
  for (int i = 0; i < nops; ++i) item[i] = itemsize(p.dtypes[i]);
  char* ptrs[kOps] = {};
  int64_t st[kOps] = {};
  if (p.ndim <= 1) {
    for (int i = 0; i < nops; ++i) {
      st[i] = p.ndim == 1 ? p.strides[i][0] : 0;
      ptrs[i] = p.data[i] + begin * st[i] * item[i];
    }
    body(ptrs, st, end - begin);
    return;
  }
  const int inner_dim = p.ndim - 1;
  const int64_t inner = p.sizes[inner_dim];
  for (int i = 0; i < nops; ++i) st[i] = p.strides[i][inner_dim];
  int64_t idx[kMaxPlanDims];
  int64_t rem = begin;
  for (int d = p.ndim - 1; d >= 0; --d) {
    idx[d] = rem % p.sizes[d];
    rem /= p.sizes[d];
  }
  for (int64_t pos = begin; pos < end;) {
    const int64_t n = std::min(inner - idx[inner_dim], end - pos);
    for (int i = 0; i < nops; ++i) {
      int64_t off = 0;
      for (int d = 0; d < p.ndim; ++d) off += idx[d] * p.strides[i][d];
      ptrs[i] = p.data[i] + off * item[i];
    }
    body(ptrs, st, n);
    pos += n;
    idx[inner_dim] += n;
    for (int d = inner_dim; d > 0 && idx[d] >= p.sizes[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

/// Elements per thread below which an elementwise loop stays on one thread. Handing half of a
/// cache-resident float add to a second thread costs about 6 us of OpenMP fork and join on
/// the 2-vCPU machine of docs/performance.md: measured there, 32K elements take 3.2 us on one
/// thread and 7.6 on two, 64K 7.3 and 8.8, 128K 18.8 and 13.6 (PyTorch splits from 32K).
inline constexpr int64_t kElementwiseGrain = 65536;

/// walk_range over the whole plan, split across threads in chunks of at least `grain`
/// positions (pass a smaller grain when each position is more than one cheap element).
template <class Plan, class Body>
void cpu_for_each(const Plan& p, const Body& body, int64_t grain = kElementwiseGrain) {
  detail::parallel_for(0, p.numel, grain, [&](int64_t b, int64_t e) { walk_range(p, b, e, body); });
}

}  // namespace ignis::cpu

namespace ignis::cpu {

/// Calls f.template operator()<T>() with T = double for float64 and float otherwise, for
/// kernels whose front end has already converted 16-bit inputs to float32.
template <class F>
void visit_float_or_double(DType t, const F& f) {
  if (t == kFloat64) f.template operator()<double>();
  else f.template operator()<float>();
}

// Note [Streaming stores]
// An output far larger than the caches will not be read back from them, yet a normal store
// first reads each line into the cache (write-allocate): 4 memory streams for c = a + b
// instead of 3. Non-temporal stores skip that read; measured here on a 16M-element float add
// they move 45 GB/s against 32 GB/s. Below kStreamingBytes the output is likely consumed
// from the cache by the next op, so normal stores stay. Ops whose arithmetic, not memory,
// bounds them (exp, tanh, GELU …) gain nothing from streaming and measured twice as slow
// with it, so they never stream (kMathBound, src/cpu/unary.cpp).
inline constexpr int64_t kStreamingBytes = int64_t(4) << 20;

/// True when an op writing `numel` elements of Out should use streaming stores.
template <class Out>
inline bool use_streaming_stores(int64_t numel) {
  return numel * int64_t(sizeof(Out)) >= kStreamingBytes;
}

/// o[i] = value_at(i) for i in [0, n), contiguous. With `stream`, float and double outputs
/// are written with non-temporal stores (Note [Streaming stores]); call it only from a body
/// run by cpu_for_each_streaming, which fences them.
/// Always inlined, so a caller compiled for a wider ISA (an AVX-512 wrapper) vectorises it.
template <class Out, class ValueAt>
[[gnu::always_inline]] inline void write_contiguous(
    Out* o, int64_t n, bool stream, const ValueAt& value_at) {
#if defined(__AVX__)
  if constexpr (std::is_same_v<Out, float> || std::is_same_v<Out, double>) {
    if (stream) {
      constexpr int kWidth = 32 / int(sizeof(Out));
      int64_t i = 0;
      for (; i < n && (reinterpret_cast<uintptr_t>(o + i) & 31); ++i) o[i] = value_at(i);
      for (; i + kWidth <= n; i += kWidth) {
        // One vector's worth computed by the vectorised loop, then streamed out.
        alignas(32) Out lane[kWidth];
#pragma omp simd
        for (int j = 0; j < kWidth; ++j) lane[j] = value_at(i + j);
        if constexpr (std::is_same_v<Out, float>) _mm256_stream_ps(o + i, _mm256_load_ps(lane));
        else _mm256_stream_pd(o + i, _mm256_load_pd(lane));
      }
      for (; i < n; ++i) o[i] = value_at(i);
      return;  // fenced by cpu_for_each_streaming at the end of the thread's chunk
    }
  }
#endif
  (void)stream;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) o[i] = value_at(i);
}

/// Orders this thread's streaming stores before whatever follows (other threads' reads after
/// the parallel region's join included).
inline void store_fence() {
#if defined(__AVX__)
  _mm_sfence();
#endif
}

/// cpu_for_each for bodies that may write with write_contiguous(…, stream, …): with `stream`,
/// each thread fences its non-temporal stores once, after its whole chunk. (A fence per run
/// made a cat along dim 1 of two [2048,512] floats, runs of 512 values, take 0.75-0.81 ms
/// against 0.23-0.31 with normal stores.)
template <class Plan, class Body>
void cpu_for_each_streaming(
    const Plan& p, bool stream, const Body& body, int64_t grain = kElementwiseGrain) {
  detail::parallel_for(0, p.numel, grain, [&](int64_t b, int64_t e) {
    walk_range(p, b, e, body);
    if (stream) store_fence();
  });
}

}  // namespace ignis::cpu
