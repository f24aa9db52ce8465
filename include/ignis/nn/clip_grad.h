// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_): rescales or clamps
// the .grad() of parameters in place, without recording gradients. Parameters without a
// gradient are skipped.
#pragma once

#include <limits>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::nn::utils {

/// Scales all gradients by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
/// norm_type-norm of all gradients together (infinity: the largest |g|). Returns total_norm
/// as a 0-dim tensor (0 when no parameter has a gradient). The scaling is computed on the
/// gradients' device without waiting for it; a non-finite total makes the gradients
/// non-finite (as PyTorch's), or throws ValueError when error_if_nonfinite (which reads the
/// total on the host).
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2, bool error_if_nonfinite = false);
/// Clamps every gradient element to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace ignis::nn::utils
