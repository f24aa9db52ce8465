// Kernel slots of fused optimizer updates (and GradScaler's unscale, which runs before them): one pass over a parameter, its gradient and its
// state instead of the three to five in-place ops the update rule takes when written with
// ops (src/optim/optimizers.cpp uses the ops where a device has no fused kernel). The
// arithmetic is the ops' own, in the same order and precision, so both paths agree.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"

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
  // When set, a float64 on the parameter's device that the kernel reads lr from instead of
  // `lr` (the CUDA kernel only; set while a CUDA graph is captured, Note [Whole-step capture]).
  const double* lr_on_device = nullptr;
};

inline KernelSlot<void (*)(const SgdUpdateArgs&)> sgd_update_kernel{"sgd_update"};

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

}  // namespace ignis::detail
