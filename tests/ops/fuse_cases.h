// Functions the fused-elementwise tests run on the CPU (tests/ops/test_fuse.cpp) and on the
// GPU (tests/cuda/test_cuda_fuse.cpp), written once for tensors and traces.
#pragma once

#include "ignis/fuse.h"
#include "ignis/ops.h"

namespace ignis::testing {

/// Every op a fused function offers, smooth for x in (0.2, 2) and y in (-1.5, 1.5) except at
/// the kinks the gradient tests avoid by drawing random inputs.
inline const auto every_fused_op = [](auto x, auto y) {
  auto a = sigmoid(x * y) + tanh(y) * exp(-x) - log(x) / (y * y + 1.0);
  auto b = sqrt(x) * rsqrt(x + 1.0) + sin(y) * cos(x) + log1p(x) - expm1(y * 0.5);
  auto c = gelu(y) + gelu(x, "tanh") + silu(y) + softplus(y, 2.0, 1.0) + reciprocal(x + 1.0);
  auto d = pow(x, y) + pow(x, 3.0) + pow(2.0, y) + minimum(a, b) * sign(y);
  auto e = where(gt(y, 0.0), c, d) + clamp(y, -0.5, 0.7) + clamp_min(x, 1.0) + relu(y);
  return e * 0.25 + (2.0 - abs(y)) / 3.0 + maximum(x, y);
};

}  // namespace ignis::testing
