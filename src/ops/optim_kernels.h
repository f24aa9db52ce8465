// Kernel slots of fused optimizer updates (and GradScaler's unscale, which runs before them): one pass over a parameter, its gradient and its
// state instead of the three to five in-place ops the update rule takes when written with
// ops (src/optim/optimizers.cpp uses the ops where a device has no fused kernel). The
// arithmetic is the ops' own, in the same order and precision, so both paths agree.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "kernels/optim_math.h"
#include "kernels/sgd_math.h"

namespace ignis::detail {

/// SGD as PyTorch 1.13's single-tensor rule, elementwise over n contiguous values of dtype:
///   d = maximize ? -g : g;  d += weight_decay * p;
///   buf = first ? d : momentum * buf + (1 - dampening) * d   (when momentum != 0)
///   d = nesterov ? d + momentum * buf : buf;  p += -lr * d
struct SgdUpdateArgs {
  DType dtype = kFloat32;  // float32 or float64
  int64_t n = 0;
  void* param = nullptr;
  const void* grad = nullptr;
  void* momentum_buffer = nullptr;  // null when momentum == 0
  bool first = false;               // the buffer is being created: buf = d
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
  // When set, two float64 on the parameter's device, the learning rate and the momentum,
  // that the kernel reads instead of `lr` and `momentum` (the CUDA kernel only; set while a
  // CUDA graph is captured, Note [Whole-step capture]: schedulers change both).
  const double* values_on_device = nullptr;
};

inline KernelSlot<void (*)(const SgdUpdateArgs&)> sgd_update_kernel{"sgd_update"};

/// Multi-tensor optimizer updates: one call (one launch on a GPU) applies SGD, Adam/AdamW or
/// RMSprop to every float32 parameter of a group on one device, with the per-element rules of
/// src/kernels/sgd_math.h and optim_math.h.
enum class OptimRule : uint8_t { sgd, adam, rmsprop };

/// One parameter of a multi-tensor update: contiguous float32 tensors of n elements. The
/// state tensors by rule (null where the options do not use one):
///   sgd:     {momentum_buffer}
///   adam:    {exp_avg, exp_avg_sq, max_exp_avg_sq}
///   rmsprop: {square_avg, grad_avg, momentum_buffer}
/// `scalars` points at the step's values on the tensors' device, so a step can read a
/// learning rate kept on the GPU without a host round trip (and a CUDA graph's replays the
/// values of their step):
///   sgd: {lr, momentum} (kernels::with_device_values);  rmsprop: {lr};
///   adam: {1 - lr * weight_decay, lr / (1 - beta1^t),
///   sqrt(1 - beta2^t)}, in float64 (a learning rate kept on the device in float64 can be
///   read in place); kernels::neg_lr_from and adam_step_from round them once.
struct MultiTensorItem {
  int64_t n = 0;
  float* param = nullptr;
  const float* grad = nullptr;
  float* state[3] = {};
  const double* scalars = nullptr;
  bool first = false;  // sgd: the momentum buffer is new, buf = d
};

/// The rule, the items (all on one device) and the options that do not change per step (the
/// neg_lr and momentum fields of `sgd` are unused: they come from each item's scalars).
struct MultiTensorUpdateArgs {
  OptimRule rule = OptimRule::sgd;
  std::vector<MultiTensorItem> items;
  kernels::SgdConstants<float> sgd{};
  bool sgd_decay = false, sgd_momentum = false, sgd_nesterov = false;
  kernels::AdamConstants<float> adam{};
  kernels::RmspropConstants<float> rmsprop{};
};

inline KernelSlot<void (*)(const MultiTensorUpdateArgs&)> multi_tensor_update_kernel{
    "multi_tensor_update"};

/// GradScaler's unscale (PyTorch's _amp_foreach_non_finite_check_and_unscale_): for every
/// element g of every tensor, found_inf |= !isfinite(g), then g *= inv_scale, in place, in
/// one pass over all the tensors of one dtype and device. inv_scale is a float32 value (as
/// PyTorch keeps it), applied in the tensors' compute type (float for half and bfloat16).
/// Returns found_inf (a device implementation reads back one flag).
struct UnscaleArgs {
  DType dtype = kFloat32;  // any floating dtype
  std::vector<void*> data;      // contiguous tensors
  std::vector<int64_t> numel;
  float inv_scale = 1;
};

inline KernelSlot<bool (*)(const UnscaleArgs&)> unscale_kernel{"grad_scaler_unscale"};

/// all_finite's pass (the check of unscale without the scaling): *finite = false when any
/// element of any tensor is inf or NaN, in one pass over all the tensors of one dtype and
/// device. The flag is a bool in the tensors' memory and is not read back, so a step can check
/// its gradients without waiting for the device (and inside a CUDA graph capture).
struct NonFiniteCheckArgs {
  DType dtype = kFloat32;         // any floating dtype
  std::vector<const void*> data;  // non-overlapping and dense tensors
  std::vector<int64_t> numel;
  bool* finite = nullptr;         // 0-dim, same device; only ever set to false
};

inline KernelSlot<void (*)(const NonFiniteCheckArgs&)> non_finite_check_kernel{"all_finite"};

}  // namespace ignis::detail
