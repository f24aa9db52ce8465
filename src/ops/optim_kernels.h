// Kernel slots of fused optimizer updates: one pass over a parameter, its gradient and its
// state instead of the three to five in-place ops the update rule takes when written with
// ops (src/optim/optimizers.cpp uses the ops where a device has no fused kernel). The
// arithmetic is the ops' own, in the same order and precision, so both paths agree.
#pragma once

#include <cstdint>

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
};

inline KernelSlot<void (*)(const SgdUpdateArgs&)> sgd_update_kernel{"sgd_update"};

}  // namespace ignis::detail
