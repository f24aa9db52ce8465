// The kernel slot behind the geometric batch transforms (crop, flip, cutout). One kernel
// covers all three: each output pixel reads one source pixel of a per-sample window, possibly
// mirrored, outside the image zero or reflected, and an optional per-sample rectangle is
// zeroed afterwards. The front ends (src/data/transforms.cpp) only draw the per-sample
// parameters, so a CUDA kernel needs nothing but this slot.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"

namespace ignis::data::detail {

struct SampleWindow {
  int64_t top = 0, left = 0;  ///< window origin in source coordinates (may be negative)
  bool flip = false;          ///< mirror the window horizontally
  int64_t cut_y0 = 0, cut_y1 = 0, cut_x0 = 0, cut_x1 = 0;  ///< zeroed output rectangle
};

struct GeometryParams {
  bool reflect = false;               ///< outside the source: reflect (true) or zero (false)
  std::vector<SampleWindow> windows;  ///< one per sample
  /// The fused CPU pipeline only (Note [Fused CPU pipeline], transforms.h): uint8 in,
  /// float32 out, each source value v becoming (v / 255 - mean[c]) / std[c] (no mean/std:
  /// v / 255); zero padding stays 0. Empty otherwise.
  std::vector<float> mean, std;
  bool to_float = false;
};

/// in: contiguous [B, C, H, W]; out: contiguous [B, C, h, w], same dtype (uint8 or float32),
/// or uint8 -> float32 with to_float.
using SampleGeometryFn = void (*)(const Tensor& in, Tensor& out, const GeometryParams& p);
inline ignis::detail::KernelSlot<SampleGeometryFn> sample_geometry_kernel{"sample_geometry"};

}  // namespace ignis::data::detail
