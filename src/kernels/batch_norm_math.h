// The per-element arithmetic of batch norm and of its fused epilogues (ReLU, residual add +
// ReLU), shared by the CPU loops (src/cpu/batch_norm.cpp) and the CUDA kernels
// (src/cuda/nn.cu) so both devices round the same values in the same order. The statistics
// reductions are the devices' own; src/ops/nn_kernels.h states the slots' contract.
#pragma once

#include "kernels/host_device.h"

namespace ignis::kernels {

/// What a batch-norm pass does after normalising, without another pass over memory.
enum class BnEpilogue : uint8_t {
  None,     // y = x * scale + shift
  Relu,     // y = relu(x * scale + shift)
  AddRelu,  // y = relu(x * scale + shift + residual)
};

/// One output element. scale = weight * invstd and shift = bias - mean * scale are folded per
/// channel; each step rounds to T as batch_norm, add and relu do one after the other, so the
/// fused op gives the unfused composition's values. ReLU lets NaN through, as relu does.
template <BnEpilogue E, class T>
IGNIS_HOST_DEVICE T batch_norm_output(T x, T scale, T shift, T residual) {
  T y = x * scale + shift;
  if constexpr (E == BnEpilogue::AddRelu) y = y + residual;
  if constexpr (E != BnEpilogue::None) y = (y > T(0) || is_nan(y)) ? y : T(0);
  return y;
}

/// The output gradient g carried back through the epilogue's ReLU: g where the saved output
/// y is positive, else 0 (relu_backward's rule). It is also the residual's gradient.
template <BnEpilogue E, class T>
IGNIS_HOST_DEVICE T batch_norm_masked_grad(T g, T y) {
  if constexpr (E == BnEpilogue::None) return g;
  else return y > T(0) ? g : T(0);
}

/// The normalised input (x - mean) * invstd, in double as the statistics are.
IGNIS_HOST_DEVICE double batch_norm_xhat(double x, double mean, double invstd) {
  return (x - mean) * invstd;
}

/// The input gradient k (g - mg - xhat mgx) for k = weight * invstd and the channel means
/// mg of g and mgx of g * xhat (both zero in eval mode, where the statistics are constants).
IGNIS_HOST_DEVICE double batch_norm_grad_input(double g, double xhat, double k, double mg,
                                               double mgx) {
  return k * (g - mg - xhat * mgx);
}

}  // namespace ignis::kernels
