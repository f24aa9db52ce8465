// The fused SGD rule for one element (src/ops/optim_kernels.h states it), shared by the CPU
// loop (src/cpu/optim_update.cpp) and the CUDA kernel (src/cuda/loss_optim.cu) so both run
// the same arithmetic in the same order. The options are template parameters: each variant
// compiles to straight-line code (on the CPU, a loop with runtime tests ran scalar).
#pragma once

#include "kernels/host_device.h"

namespace ignis::kernels {

/// The rule's constants in the element type: lr is already negated, damp = 1 - dampening,
/// sign = -1 when maximizing (so -g is exact).
template <class T>
struct SgdConstants {
  T neg_lr, momentum, damp, weight_decay, sign;
};

/// k with the learning rate and the momentum read from memory when `values` is given: two
/// float64 that a captured CUDA graph reads at every replay, so a scheduler's new values
/// (OneCycle cycles both) are seen without a recapture.
template <class T>
IGNIS_HOST_DEVICE SgdConstants<T> with_device_values(SgdConstants<T> k, const double* values) {
  if (values) {
    k.neg_lr = T(-values[0]);
    k.momentum = T(values[1]);
  }
  return k;
}

/// Updates p (and the momentum buffer b, when kMomentum) for gradient g.
template <class T, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
IGNIS_HOST_DEVICE void sgd_step(T& p, T g, T& b, const SgdConstants<T>& k) {
  T d = k.sign * g;
  if constexpr (kDecay) d = d + k.weight_decay * p;
  if constexpr (kMomentum) {
    if constexpr (kFirst)
      b = d;
    else
      b = T(b * k.momentum) + k.damp * d;
    if constexpr (kNesterov)
      d = d + k.momentum * b;
    else
      d = b;
  }
  p = p + k.neg_lr * d;
}

}  // namespace ignis::kernels
