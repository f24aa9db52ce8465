// The training-mode forward of a BatchNorm whose sync_group is set (src/nn/sync_batch_norm.cpp),
// called from BatchNorm::forward.
#pragma once

#include "ignis/nn/conv.h"

namespace ignis::nn::detail {

/// Normalises x with the mean and variance over every rank's batch and, when tracked,
/// updates bn's running statistics with them. Differentiable: backward all-reduces the two
/// per-channel sums the input gradient needs. A collective: every rank of bn.sync_group
/// calls it, with batches of any size (even empty) and the same channels.
Tensor sync_batch_norm(BatchNorm& bn, const Tensor& x);

}  // namespace ignis::nn::detail
