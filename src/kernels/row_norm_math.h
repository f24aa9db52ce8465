// Layer norm and group norm per element, shared by the CPU loops (src/cpu/row_norm.cpp) and the
// CUDA kernels (src/cuda/row_norm.cu). Both see the input as [rows, cols] rows normalised on
// their own (src/ops/nn_kernels.h, RowNormArgs) and compute from the row's mean and 1/std,
// which each backend sums in its own order: the CUDA kernels in double, the CPU loops in the
// row's type (float32 rows in float, with double totals for every sum).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace ignis::kernels {

/// The weight/bias index of column j of row r: the column for layer norm (groups == 0); for
/// group norm, the channel, a row being one (sample, group) pair of cpg channels of s values.
struct AffineIndex {
  int64_t groups, cpg, s;
  IGNIS_HOST_DEVICE int64_t operator()(int64_t r, int64_t j) const {
    return groups == 0 ? j : (r % groups) * cpg + j / s;
  }
  IGNIS_HOST_DEVICE int64_t size(int64_t cols) const { return groups == 0 ? cols : groups * cpg; }
};

/// y = (x - mean) * invstd * w + b (w = 1 and b = 0 when absent), in A: double on CUDA,
/// the row's own type on the CPU, which passes the mean as mean + mean_lo (its float and the
/// remainder), so that a row whose mean is large against its spread is still centred exactly.
template <class A>
IGNIS_HOST_DEVICE A row_norm_value(A x, A mean, A invstd, A w, A b, A mean_lo = A(0)) {
  return ((x - mean) - mean_lo) * invstd * w + b;
}

/// The input gradient of one element: invstd * (gx - mean(gx) - xhat * mean(gx * xhat)), where
/// gx = grad_out * w; sg and sgx are those two row means.
template <class A>
IGNIS_HOST_DEVICE A row_norm_grad(A x, A g, A w, A mean, A invstd, A sg, A sgx) {
  const A xh = (x - mean) * invstd;
  return invstd * (g * w - sg - xh * sgx);
}

}  // namespace ignis::kernels
