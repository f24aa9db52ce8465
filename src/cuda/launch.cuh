// Launch helpers shared by the CUDA kernel files: the grid for n elements (grid-stride) or n
// rows (a team per row), the offsets of an ElementwisePlan's operands from a flat index (in
// 32- or 64-bit arithmetic), and the stream a plan's kernels run on.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "core/iterator.h"
#include "cuda/check.h"
#include "cuda/context.h"

namespace ignis::cuda::detail {

using ignis::detail::ElementwisePlan;
using ignis::detail::kMaxPlanDims;

inline constexpr int kThreads = 256;

/// Blocks for n work items at `per_thread` items per thread; kernels loop (grid-stride) over
/// what a capped grid does not cover.
inline unsigned grid_for(int64_t n, int per_thread = 1) {
  const int64_t per_block = int64_t(kThreads) * per_thread;
  const int64_t blocks = (n + per_block - 1) / per_block;
  return unsigned(std::clamp<int64_t>(blocks, 1, int64_t(1) << 20));
}

/// Blocks for `units` rows (or outputs) at `per_block` rows per block, for the kernels that
/// give each row its own team of threads and do not loop over the grid. The count must fit a
/// CUDA grid's x dimension (2^31 - 1): past it the launch would fail, and past 2^32 the cast to
/// unsigned would wrap and silently leave rows undone, so it is an error that names the op.
/// (row_norm.cu caps its grid and loops over rows instead; these kernels could do the same once
/// a GPU can test the change.)
inline unsigned blocks_for_rows(int64_t units, int64_t per_block, const char* op) {
  const int64_t blocks = (units + per_block - 1) / per_block;
  IGNIS_CHECK(
      blocks <= int64_t(INT32_MAX),
      ValueError,
      "[{}] {} rows need {} thread blocks, more than a CUDA grid holds (2^31 - 1)",
      op,
      units,
      blocks);
  return unsigned(blocks);
}

/// Makes the plan's device current and returns its current stream.
struct LaunchOn {
  explicit LaunchOn(Device d) : guard(d.index), stream(current_cuda_stream(d.index)) {}
  DeviceGuard guard;
  cudaStream_t stream;
};

/// Element offsets of N operands at a flat (row-major) index of the plan, in index type I:
/// int32_t when plan.fits_int32 (cheaper division on the GPU), else int64_t.
template <class I, int N>
struct Offsets {
  int ndim = 0;
  I sizes[kMaxPlanDims] = {};
  I strides[N][kMaxPlanDims] = {};

  __device__ __forceinline__ void at(I linear, I (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {  // innermost dim last in the plan
      const I i = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }
};

/// The offsets of a plan's first N operands (any plan width; operands past its count have
/// zero strides).
template <class I, int N, class Plan>
Offsets<I, N> make_offsets(const Plan& p) {
  Offsets<I, N> o;
  o.ndim = p.ndim;
  for (int d = 0; d < p.ndim; ++d) {
    o.sizes[d] = I(p.sizes[d]);
    for (int k = 0; k < N; ++k) o.strides[k][d] = I(p.strides[k][d]);
  }
  return o;
}

/// True when every operand's address is a multiple of `bytes` (the vectorised path).
inline bool aligned(const ElementwisePlan& p, int bytes) {
  for (int i = 0; i < p.noperands; ++i)
    if (reinterpret_cast<uintptr_t>(p.data[i]) % uintptr_t(bytes) != 0) return false;
  return true;
}

}  // namespace ignis::cuda::detail
