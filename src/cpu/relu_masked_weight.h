// The CPU kernel of the relu_mask_weight_grad slot (src/ops/linear_act_kernels.h).
#pragma once

#include "ops/linear_act_kernels.h"

namespace ignis::cpu {

/// dw = (g * (y > 0))^T x and db = column sums of the masked g, the mask applied in registers;
/// false (nothing written) for shapes it leaves to the mask pass and BLAS.
bool relu_mask_weight_grad(const detail::ReluMaskWeightGrad& a);

}  // namespace ignis::cpu
