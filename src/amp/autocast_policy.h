// What the op front ends call to apply autocast (include/ignis/amp.h lists which op follows
// which policy). Each listed op starts with
//   if (autocast_pending()) { AutocastApplied once; return op(autocast_low(a), ...); }
// so the casts happen at the op's entry, before any device is chosen, and every backend gets
// them. Internal.
#pragma once

#include <vector>

#include "ignis/tensor.h"

namespace ignis::detail {

/// Note [Autocast applies once]
/// An op under autocast casts its inputs and calls itself again with autocast suspended, so
/// it neither casts twice nor casts inside its own implementation (linear's addmm, the ops a
/// loss is built from); PyTorch excludes its Autocast dispatch key the same way. The ops the
/// re-entered op calls see autocast as off.
bool autocast_pending();

/// Suspends autocast on this thread while alive (Note [Autocast applies once]).
class AutocastApplied {
 public:
  AutocastApplied();
  ~AutocastApplied();
  AutocastApplied(const AutocastApplied&) = delete;
  AutocastApplied& operator=(const AutocastApplied&) = delete;

 private:
  bool prev_;
};

/// t in the autocast dtype when it is float32/bfloat16/float16 (float64, integers, bool and
/// undefined tensors are returned as they are).
Tensor autocast_low(const Tensor& t);
/// t in float32 when it is bfloat16/float16; anything else as it is.
Tensor autocast_fp32(const Tensor& t);

}  // namespace ignis::detail
