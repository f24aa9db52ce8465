// The per-pixel math of the geometric batch transforms (crop with padding, flip, and the fused
// uint8 -> normalised float conversion), shared by the CPU kernel (src/cpu/data_transforms.cpp)
// and the CUDA one (src/cuda/data_transforms.cu) so both compute the same values from the same
// per-sample windows (src/data/transform_kernels.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/host_device.h"

namespace ignis::kernels {

/// Source coordinate of padded coordinate i of an axis of n pixels, or -1 (zero padding).
/// Reflection mirrors about the edge pixels (as PyTorch's "reflect"), any distance away.
IGNIS_HOST_DEVICE int64_t geometry_source_coord(int64_t i, int64_t n, bool reflect) {
  if (i >= 0 && i < n) return i;
  if (!reflect) return -1;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

/// The output value of source value v: a copy, or in the fused pipeline (v / 255 - mean) / std
/// in float32, operation for operation as the unfused ToFloat + Normalize (Norm = false:
/// v / 255). Two correctly rounded float operations, so host and device agree bit for bit.
template <class In, class Out, bool Norm>
IGNIS_HOST_DEVICE Out geometry_convert(In v, float mean, float std) {
  if constexpr (std::is_same_v<In, Out>) {
    return v;
  } else {
    const float f = float(v) / 255.0f;
    return Norm ? (f - mean) / std : f;
  }
}

}  // namespace ignis::kernels
