// Memory formats as strides (Note [Memory format is in the strides], memory_format.h):
// PyTorch 1.13's rules, and the Tensor methods that ask them.
#include "core/memory_format.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/shape.h"
#include "core/tensor_impl.h"

namespace ignis {

const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::contiguous: return "contiguous";
    case MemoryFormat::channels_last: return "channels_last";
    case MemoryFormat::preserve: return "preserve";
  }
  return "?";
}

namespace detail {

// The dims of an NCHW tensor from the innermost in channels-last memory to the outermost.
constexpr int kChannelsLastOrder[4] = {1, 3, 2, 0};

Shape channels_last_strides(const Shape& sizes) {
  Shape st(4);
  st[1] = 1;
  st[3] = sizes[1];
  st[2] = st[3] * sizes[3];
  st[0] = st[2] * sizes[2];
  return st;
}

bool is_channels_last_contiguous_layout(const Shape& sizes, const Shape& strides) {
  if (sizes.size() != 4) return false;
  int64_t expected = 1;
  for (int d : kChannelsLastOrder) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool is_channels_last_strides_like(const Shape& sizes, const Shape& strides) {
  if (sizes.size() != 4 || strides[1] == 0) return false;  // a broadcast C: NCHW by default
  int64_t min = 0;
  for (int d : kChannelsLastOrder) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    // [N, 1, 1, 1] with equal strides (contiguous, or a slice of N11W) stays NCHW.
    if (d == 0 && min == strides[1]) return false;
    // Growing min by the size tells [H, 1, 1, 1] (NHWC strides of N1H1) from [H, H, 1, 1].
    min = strides[d] * (sizes[d] > 1 ? sizes[d] : 1);
  }
  return true;
}

bool is_non_overlapping_and_dense(const Shape& sizes, const Shape& strides) {
  // As PyTorch: either contiguous format counts (so does every empty tensor).
  if (is_contiguous_layout(sizes, strides) || is_channels_last_contiguous_layout(sizes, strides))
    return true;
  const size_t nd = sizes.size();
  if (nd == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(nd);
  std::iota(perm.begin(), perm.end(), size_t(0));
  // By stride, with size-0 and size-1 dims last (their strides do not matter).
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t require = 1;
  for (size_t d : perm) {
    if (sizes[d] < 2) return true;
    if (strides[d] != require) return false;
    require *= sizes[d];
  }
  return true;
}

void check_memory_format(const Shape& sizes, MemoryFormat format, const char* op) {
  IGNIS_CHECK(format != MemoryFormat::channels_last || sizes.size() == 4, ValueError,
              "[{}] memory format channels_last needs a 4-D tensor [N, C, H, W], got shape {}",
              op, shape_str(sizes));
}

bool same_dense_layout(const Tensor& a, const Tensor& b) {
  if (a.is_contiguous() && b.is_contiguous()) return true;
  return a.strides() == b.strides() && is_non_overlapping_and_dense(a.sizes(), a.strides());
}

Tensor make_tensor_in_format(const Shape& sizes, DType dtype, Device device, MemoryFormat format,
                             const char* op) {
  IGNIS_CHECK(format != MemoryFormat::preserve, ValueError,
              "[{}] memory format preserve needs a tensor to preserve; use contiguous or "
              "channels_last",
              op);
  check_memory_format(sizes, format, op);
  if (format == MemoryFormat::contiguous) return make_tensor(sizes, dtype, device);
  Tensor flat = make_tensor({shape_numel(sizes)}, dtype, device);
  return make_view(flat, sizes, channels_last_strides(sizes), 0);
}

Tensor make_tensor_preserving(const Tensor& like, DType dtype, Device device) {
  // Dense layouts keep their exact strides, size-1 dims' included, as PyTorch's empty_strided
  // (a contiguous one directly: the same strides without a second tensor handle).
  if (like.is_contiguous() && like.strides() == contiguous_strides(like.sizes()))
    return make_tensor(like.sizes(), dtype, device);
  if (is_non_overlapping_and_dense(like.sizes(), like.strides())) {
    Tensor flat = make_tensor({like.numel()}, dtype, device);
    return make_view(flat, like.sizes(), like.strides(), 0);
  }
  return make_tensor_in_format(like.sizes(), dtype, device, like.suggest_memory_format(),
                               "preserve");
}

}  // namespace detail

bool Tensor::is_contiguous(MemoryFormat format) const {
  if (format != MemoryFormat::channels_last) return is_contiguous();
  return detail::is_channels_last_contiguous_layout(sizes(), strides());
}

MemoryFormat Tensor::suggest_memory_format() const {
  return detail::is_channels_last_strides_like(sizes(), strides()) ? MemoryFormat::channels_last
                                                                   : MemoryFormat::contiguous;
}

}  // namespace ignis
