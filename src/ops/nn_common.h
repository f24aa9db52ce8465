// Helpers shared by the front ends of the convolutional-network family (conv.cpp, pool.cpp,
// norm.cpp): memory-layout detection and allocation in a chosen layout, the compute dtype
// rule, and the common argument checks. Internal; header-only.
#pragma once

#include "core/error.h"
#include "core/memory_format.h"
#include "core/shape.h"
#include "core/tensor_impl.h"
#include "ops/nn_ops.h"

namespace ignis::detail {

/// True for a 4-D tensor laid out NHWC in memory (PyTorch's is_contiguous(channels_last),
/// dims of size 1 ignored) that is not also NCHW-contiguous; such tensors keep their layout
/// through the ops.
inline bool is_channels_last(const Tensor& t) {
  return t.dim() == 4 && !t.is_contiguous() &&
         is_channels_last_contiguous_layout(t.sizes(), t.strides());
}

/// Whether two [N, C, H, W] tensors both hold each pixel's C values contiguously, so a kernel
/// can take a pixel's channels as one vector instead of C planes of strided reads (the pooling
/// and resampling kernels' channels-last walks).
inline bool channels_inner(const Tensor& a, const Tensor& b) {
  return a.size(1) > 1 && a.stride(1) == 1 && b.stride(1) == 1;
}

/// Whether the batch-norm kernels walk `input` (a kernel's argument, already in the layout the
/// front end chose; `spatial` values per channel and sample) as rows of C channels: a
/// channels-last tensor, or one with a single value per channel and sample (BatchNorm1d's
/// [N, C]), whose contiguous layout is those rows already ((n*C + c)*1 = n*C + c). The NCHW
/// walk would take such an input one value per channel at a time, with stride C.
inline bool batch_norm_walks_rows(const Tensor& input, int64_t spatial) {
  return spatial == 1 || is_channels_last(input);
}

/// A new uninitialised tensor of logical shape `shape` (4-D when channels_last).
inline Tensor empty_in_layout(const Shape& shape, DType dtype, Device device, bool channels_last) {
  return make_tensor_in_format(
      shape, dtype, device, channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous,
      "empty_in_layout");
}

/// t converted to dtype in the requested layout (no copy when it already is).
inline Tensor to_layout(const Tensor& t, DType dtype, bool channels_last) {
  if (channels_last) {
    if (t.dtype() == dtype && is_channels_last(t)) return t;
    Tensor r = empty_in_layout(t.sizes(), dtype, t.device(), true);
    r.copy_(t);
    return r;
  }
  return t.to(dtype).contiguous();
}

/// float32 and float64 compute as themselves; half and bfloat16 in float32 (converted on the
/// way in and out). Anything else throws DTypeError.
inline DType nn_compute_dtype(const char* op, DType t) {
  IGNIS_CHECK(is_floating(t), DTypeError, "[{}] expected a floating-point input, got {}", op,
              dtype_name(t));
  return t == kFloat64 ? kFloat64 : kFloat32;
}

/// Every defined tensor among `ts` has `like`'s dtype and device.
inline void check_same_dtype_device(const char* op, const Tensor& like,
                                    std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  IGNIS_CHECK(like.defined(), ValueError, "[{}] undefined input tensor", op);
  for (const auto& [name, t] : ts) {
    if (!t->defined()) continue;
    IGNIS_CHECK(t->dtype() == like.dtype(), DTypeError,
                "[{}] expected {} to have the input's dtype {}, got {}", op, name,
                dtype_name(like.dtype()), dtype_name(t->dtype()));
    IGNIS_CHECK(t->device() == like.device(), DeviceError,
                "[{}] expected {} on the input's device {}, got {}", op, name,
                like.device().str(), t->device().str());
  }
}

/// Undefined stays undefined; otherwise converted to dtype and made contiguous.
inline Tensor maybe_contiguous(const Tensor& t, DType dtype) {
  return t.defined() ? t.to(dtype).contiguous() : t;
}

}  // namespace ignis::detail
