// Layer norm and group norm per element, shared by the CPU loops (src/cpu/row_norm.cpp) and the
// CUDA kernels (src/cuda/row_norm.cu). Both see the input as [rows, cols] rows normalised on
// their own (src/ops/nn_kernels.h, RowNormArgs) and compute in double from the row's mean
// and 1/std, which each backend sums in its own order.
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

/// y = (x - mean) * invstd * w + b (w = 1 and b = 0 when absent).
IGNIS_HOST_DEVICE double row_norm_value(double x, double mean, double invstd, double w, double b) {
  return (x - mean) * invstd * w + b;
}

/// The input gradient of one element: invstd * (gx - mean(gx) - xhat * mean(gx * xhat)), where
/// gx = grad_out * w; sg and sgx are those two row means.
IGNIS_HOST_DEVICE double row_norm_grad(
    double x, double g, double w, double mean, double invstd, double sg, double sgx) {
  const double xh = (x - mean) * invstd;
  return invstd * (g * w - sg - xh * sgx);
}

}  // namespace ignis::kernels
