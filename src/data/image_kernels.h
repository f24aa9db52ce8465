// Bilinear resampling shared by resize (image.cpp) and RandomResizedCrop (transforms.cpp):
// the taps of one axis, then a plane resampled from a box of the source, in the order of
// operations of PyTorch's CPU upsample_bilinear2d (rule in ignis/data/image.h), so float32
// results agree with torchvision's to the last bit in most pixels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace ignis::data::detail {

/// For each output index: the two source indices (within [0, in)) and their weights.
struct LinearTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};

/// The taps of output indices [first, first + count) of a resize from `in` to `out` (all of
/// them by default): a crop of the resized axis without computing the rest.
inline LinearTaps linear_taps(int64_t in, int64_t out, int64_t first = 0, int64_t count = -1) {
  if (count < 0) count = out - first;
  LinearTaps t;
  const size_t n = size_t(count);
  t.i0.resize(n), t.i1.resize(n), t.w0.resize(n), t.w1.resize(n);
  const float scale = float(in) / float(out);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = first + k;
    const float src = std::max(scale * (float(i) + 0.5f) - 0.5f, 0.0f);
    const int64_t lo = std::min<int64_t>(int64_t(src), in - 1);
    const float l1 = std::clamp(src - float(lo), 0.0f, 1.0f);
    t.i0[size_t(k)] = lo;
    t.i1[size_t(k)] = lo < in - 1 ? lo + 1 : lo;
    t.w0[size_t(k)] = 1.0f - l1;
    t.w1[size_t(k)] = l1;
  }
  return t;
}

/// dst (ty.size() rows x tx.size() columns, contiguous) = the box of src whose top-left
/// corner is (top, left), resampled; src rows are `stride` elements apart. uint8 results are
/// rounded half to even and clamped.
template <class T>
void resize_plane(
    const T* src,
    int64_t stride,
    int64_t top,
    int64_t left,
    const LinearTaps& ty,
    const LinearTaps& tx,
    T* dst) {
  const size_t oh = ty.i0.size(), ow = tx.i0.size();
  for (size_t y = 0; y < oh; ++y) {
    const T* r0 = src + (top + ty.i0[y]) * stride + left;
    const T* r1 = src + (top + ty.i1[y]) * stride + left;
    const float wy0 = ty.w0[y], wy1 = ty.w1[y];
    T* out = dst + y * ow;
    for (size_t x = 0; x < ow; ++x) {
      const int64_t a = tx.i0[x], b = tx.i1[x];
      const float t0 = float(r0[a]) * tx.w0[x] + float(r0[b]) * tx.w1[x];
      const float t1 = float(r1[a]) * tx.w0[x] + float(r1[b]) * tx.w1[x];
      const float v = t0 * wy0 + t1 * wy1;
      if constexpr (std::is_same_v<T, uint8_t>)
        out[x] = uint8_t(std::clamp(std::nearbyint(v), 0.0f, 255.0f));
      else
        out[x] = v;
    }
  }
}

}  // namespace ignis::data::detail
