// The per-row arithmetic of the fused cross-entropy (formulas in src/ops/loss_kernels.h),
// shared by the CPU kernels (src/cpu/cross_entropy.cpp) and the CUDA kernels
// (src/cuda/loss_optim.cu). The row statistics (max, sum of exp) are reduced by each backend
// its own way; what is computed from them is written once here, in double as on the CPU.
#pragma once

#include "kernels/host_device.h"

namespace ignis::kernels {

/// loss_i from the row's log-sum-exp lse, its target logit x_t, the target's weight w_t and
/// smooth = sum_c w_c * (lse - x_c) (only read when eps > 0).
IGNIS_HOST_DEVICE double cross_entropy_row_loss(
    double lse, double x_t, double w_t, double smooth, double eps, double classes) {
  double loss = (1 - eps) * w_t * (lse - x_t);
  if (eps > 0) loss += eps / classes * smooth;
  return loss;
}

/// The backward's per-row coefficients for upstream gradient s: with them
///   d_j = hard * p_j + soft * (w_all * p_j - w_j) - hard * [j == t].
template <class T>
struct CrossEntropyRowGrad {
  T hard, soft;
};
template <class T>
IGNIS_HOST_DEVICE CrossEntropyRowGrad<T> cross_entropy_row_grad(
    double s, double w_t, double eps, double classes) {
  return {T(s * (1 - eps) * w_t), T(s * eps / classes)};
}

/// d_j without the target's -hard term; w_j is 1 and w_all is C without a class weight.
template <class T>
IGNIS_HOST_DEVICE T
cross_entropy_grad(const CrossEntropyRowGrad<T>& r, T p, T w_all, T w_j, bool weighted) {
  if (!weighted) return (r.hard + r.soft * w_all) * p - r.soft;
  return r.hard * p + r.soft * (w_all * p - w_j);
}

}  // namespace ignis::kernels
