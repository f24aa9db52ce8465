// Memory formats (contiguous, channels-last, preserve) as strides: PyTorch's rules for which
// strides count as which format, and allocation of new tensors in a format. Internal.
// Note [Memory format is in the strides]: a tensor has no format flag; its layout is read
// from its strides each time, as PyTorch's is_contiguous(memory_format) and
// suggest_memory_format do, so views and kernels never have a flag to keep in step.
#pragma once

#include "ignis/tensor.h"

namespace ignis::detail {

/// NHWC strides of a 4-D shape [N, C, H, W]: [HWC, 1, WC, C] (PyTorch's
/// get_channels_last_strides_2d, sizes taken as they are, so a size-0 dim gives 0 strides).
Shape channels_last_strides(const Shape& sizes);
/// PyTorch's is_contiguous(channels_last): 4-D, and walking C, W, H, N the strides of the dims
/// of size other than 1 are the running products of the sizes.
bool is_channels_last_contiguous_layout(const Shape& sizes, const Shape& strides);
/// PyTorch's is_channels_last_strides_2d, behind suggest_memory_format: 4-D, no size-0 dim,
/// strides non-decreasing in the order C, W, H, N; N111-like ambiguous cases are not.
bool is_channels_last_strides_like(const Shape& sizes, const Shape& strides);
/// PyTorch's is_non_overlapping_and_dense: the strides are a permutation of some contiguous
/// layout's (size-1 dims ignored), so the elements tile [offset, offset + numel).
bool is_non_overlapping_and_dense(const Shape& sizes, const Shape& strides);
/// True when b lies in memory as a does and a is dense (both contiguous, or the same dense
/// strides, e.g. both channels-last): an elementwise update running over both as flat arrays
/// of numel elements from data_ptr() then pairs the same elements.
bool same_dense_layout(const Tensor& a, const Tensor& b);
/// Throws ValueError naming op unless format can lay out `sizes` (channels_last needs 4-D).
void check_memory_format(const Shape& sizes, MemoryFormat format, const char* op);
/// A new tensor in format: contiguous or channels_last (checked with check_memory_format);
/// preserve is the caller's to resolve (make_tensor_preserving).
Tensor make_tensor_in_format(const Shape& sizes, DType dtype, Device device, MemoryFormat format,
                             const char* op);
/// A new tensor shaped like `like` with `like`'s strides when they are dense, else
/// in like.suggest_memory_format(): PyTorch's preserve rule for empty_like, clone and to().
Tensor make_tensor_preserving(const Tensor& like, DType dtype, Device device);

}  // namespace ignis::detail
