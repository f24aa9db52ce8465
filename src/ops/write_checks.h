// Checks shared by every op that writes into an existing tensor (copy_, fill_, in-place
// arithmetic, scatter_ …).
#pragma once

#include "core/error.h"
#include "core/shape.h"
#include "core/tensor_impl.h"
#include "ignis/tensor.h"

namespace ignis::detail {

/// Every in-place write calls this first. Throws when several elements of t share one memory
/// location (an expanded tensor), since a write through it would be ill-defined (Note
/// [Broadcast strides are zero]); then bumps the storage version (Note [Version counter]).
inline void check_writable_layout(const Tensor& t, const char* op) {
  // An empty tensor writes nothing; its zero strides (channels-last strides of a shape with a
  // size-0 dim, as PyTorch computes them) broadcast nothing.
  if (t.numel() > 0)
    for (int64_t d = 0; d < t.dim(); ++d)
      IGNIS_CHECK(!(t.strides()[d] == 0 && t.sizes()[d] > 1), ValueError,
                  "[{}] cannot write into a tensor of shape {} whose dimension {} is broadcast "
                  "(stride 0); call clone() or contiguous() first",
                  op, shape_str(t.sizes()), d);
  t.impl()->storage->version.fetch_add(1, std::memory_order_relaxed);
}

/// True when a and b may share memory but are not the same view: the op must read from a
/// copy of the input or risk reading values it has already overwritten.
inline bool partially_overlaps(const Tensor& dst, const Tensor& src) {
  if (!dst.is_same_storage(src)) return false;
  return !(dst.storage_offset() == src.storage_offset() && dst.sizes() == src.sizes() &&
           dst.strides() == src.strides() && dst.dtype() == src.dtype());
}

}  // namespace ignis::detail
