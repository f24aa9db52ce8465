// Pooling window arithmetic shared by the CPU loops (src/cpu/pool.cpp) and the CUDA kernels
// (src/cuda/nn.cu), so that both devices find the same windows.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace ignis::kernels {

/// Outputs [first, end) of one pooled dimension.
struct OutputRange {
  int64_t first, end;
};

/// The outputs of a pooled dimension (kernel k, stride s, padding pad, `out` outputs) whose
/// windows hold input position i: those with o * s - pad <= i < o * s - pad + k.
IGNIS_HOST_DEVICE OutputRange
covering_outputs(int64_t i, int64_t k, int64_t s, int64_t pad, int64_t out) {
  const int64_t lowest = i + pad - k + 1;  // o * s must reach it
  const int64_t first = lowest <= 0 ? 0 : (lowest + s - 1) / s;
  const int64_t end = (i + pad) / s + 1;
  return {first, end < out ? end : out};
}

/// PyTorch's adaptive window [start, end) of output cell o of `out` cells over `in`.
IGNIS_HOST_DEVICE int64_t adaptive_start(int64_t o, int64_t out, int64_t in) {
  return (o * in) / out;
}
IGNIS_HOST_DEVICE int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

}  // namespace ignis::kernels
