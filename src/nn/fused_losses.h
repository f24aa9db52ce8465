// Fused loss paths that nn::functional's losses take when the case allows (loss.cpp).
#pragma once

#include "ignis/nn/functional.h"

namespace ignis::nn::functional::detail_loss {

using Grads = std::vector<Tensor>;

/// cross_entropy with class-index targets in one node: a [N, C] or [C] float32/float64 input
/// on a device with the fused kernels. Returns an undefined tensor when the case is not
/// covered (the caller then composes the loss from ops); the inputs are already validated.
Tensor fused_cross_entropy(const Tensor& input, const Tensor& target,
                           const CrossEntropyOptions& opts);

}  // namespace ignis::nn::functional::detail_loss
