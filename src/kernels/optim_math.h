// The fused Adam/AdamW and RMSprop rules for one element, shared by the CPU loops
// (src/cpu/optim_update.cpp) and the multi-tensor CUDA kernel (src/cuda/multi_tensor_optim.cu).
// Each rounds where the op-by-op rules of src/optim/optimizers.cpp round (one rounding per op,
// scalars in the element type), so the fused and the op paths agree to the last bit wherever
// the compiler does not contract a multiply and an add into one FMA. SGD's rule is
// src/kernels/sgd_math.h.
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace ignis::kernels {

/// max as ignis::maximum computes it: a NaN on either side wins.
template <class T>
IGNIS_HOST_DEVICE T nan_max(T a, T b) {
  return (a != a || a > b) ? a : b;
}

/// Adam's options in the element type; one_minus_* are rounded from double, as the op path's
/// alpha arguments are. sign = -1 when maximizing.
template <class T>
struct AdamConstants {
  T beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, sign;
  bool l2;         // Adam with weight_decay != 0: g += weight_decay * p
  bool decoupled;  // AdamW: p *= decay before the step
  bool amsgrad;
};

/// Adam's per-step values (they depend on lr and the step count): decay = 1 - lr *
/// weight_decay (AdamW), neg_step_size = -lr / (1 - beta1^t), bias2_sqrt = sqrt(1 - beta2^t),
/// each computed in double and rounded once.
template <class T>
struct AdamStep {
  T decay, neg_step_size, bias2_sqrt;
};

/// The step values a multi-tensor update reads from memory (src/ops/optim_kernels.h,
/// MultiTensorItem::scalars, float64 so that a learning rate kept on the device in float64 can
/// be read in place): -lr for SGD and RMSprop, and Adam's AdamStep from {decay, step_size,
/// bias2_sqrt}, each rounded once to T.
template <class T>
IGNIS_HOST_DEVICE T neg_lr_from(const double* s) {
  return T(-s[0]);
}
template <class T>
IGNIS_HOST_DEVICE AdamStep<T> adam_step_from(const double* s) {
  return {T(s[0]), T(-s[1]), T(s[2])};
}

/// One element: parameter p, gradient grad, first moment m, second moment v and, with
/// amsgrad, the running maximum vmax of v.
template <class T>
IGNIS_HOST_DEVICE void adam_step(
    T& p, T grad, T& m, T& v, T& vmax, const AdamConstants<T>& k, const AdamStep<T>& s) {
  T g = k.sign * grad;
  if (k.decoupled)
    p = p * s.decay;
  else if (k.l2)
    g = g + k.weight_decay * p;
  m = T(m * k.beta1) + k.one_minus_beta1 * g;
  const T g2 = g * g;
  v = T(v * k.beta2) + k.one_minus_beta2 * g2;
  T second = v;
  if (k.amsgrad) {
    vmax = nan_max(vmax, v);
    second = vmax;
  }
  const T denom = T(T(std::sqrt(second)) / s.bias2_sqrt) + k.eps;
  const T ratio = m / denom;
  p = p + s.neg_step_size * ratio;
}

/// RMSprop's options in the element type (one_minus_alpha rounded from double).
template <class T>
struct RmspropConstants {
  T alpha, one_minus_alpha, eps, weight_decay, momentum, sign;
  bool l2;            // weight_decay != 0
  bool centered;      // subtract the squared running mean of g
  bool use_momentum;  // momentum > 0
};

/// One element: parameter p, gradient grad, running mean of g^2 sq, running mean of g ga
/// (centered) and momentum buffer buf (use_momentum); neg_lr = -lr rounded once.
template <class T>
IGNIS_HOST_DEVICE void rmsprop_step(
    T& p, T grad, T& sq, T& ga, T& buf, const RmspropConstants<T>& k, T neg_lr) {
  T g = k.sign * grad;
  if (k.l2) g = g + k.weight_decay * p;
  const T g2 = g * g;
  sq = T(sq * k.alpha) + k.one_minus_alpha * g2;
  T avg;
  if (k.centered) {
    ga = T(ga * k.alpha) + k.one_minus_alpha * g;
    const T ga2 = ga * ga;
    avg = T(std::sqrt(T(sq - ga2)));
  } else {
    avg = T(std::sqrt(sq));
  }
  avg = avg + k.eps;
  const T step = g / avg;
  if (k.use_momentum) {
    buf = T(buf * k.momentum) + step;
    p = p + neg_lr * buf;
  } else {
    p = p + neg_lr * step;
  }
}

}  // namespace ignis::kernels
