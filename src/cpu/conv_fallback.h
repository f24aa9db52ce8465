// The convolution path for what oneDNN cannot run (float64, and any geometry its primitives
// reject): im2col / col2im loops around ignis::matmul. Correct for every case the front end
// accepts; fast enough for float64 gradient checks, not tuned for speed.
#pragma once

#include "ops/nn_ops.h"

namespace ignis::cpu {

void conv2d_forward_fallback(const Tensor& input, const Tensor& weight, const Tensor& bias,
                             const Tensor& output, const detail::Conv2dParams& p);
void conv2d_backward_input_fallback(const Tensor& grad_out, const Tensor& weight,
                                    const Tensor& grad_input, const detail::Conv2dParams& p);
void conv2d_backward_weight_fallback(const Tensor& grad_out, const Tensor& input,
                                     const Tensor& grad_weight, const Tensor& grad_bias,
                                     const detail::Conv2dParams& p);

}  // namespace ignis::cpu
