// Direct CPU kernels for NCHW depthwise convolutions (groups == input channels == output
// channels: each channel filtered by its own kH x kW window), float32 and float64, forward
// (with an optional fused ReLU) and both gradients.
//
// Note [Direct depthwise convolutions]
// oneDNN 2.6 runs an NCHW depthwise convolution through its gemm-based grouped path, or (as
// Note [Preferred conv layout] had it) through its NHWC kernels with the input and gradient
// converted around them: a 3x3 over [32,128,32,32] took 20-21 ms forward and backward at one
// thread and no less at two, for 0.11 GFLOP of work. Each channel's convolution is
// independent and small, so these kernels take the activations a plane at a time: the plane
// is copied once into a zero-padded buffer whose columns are split by phase of the stride,
// so that every tap reads a contiguous run, and each block of output columns sums its taps
// in registers (forward), or each block of the output gradient is loaded once and multiplied
// into every tap's accumulator (weight gradient). The input gradient of a stride-1
// convolution is the forward with the window turned round; strided ones scatter into the
// padded buffer. Sums run in a fixed order whatever the thread count (weight and bias
// gradients add each plane's float sums in double, in batch order). Channels-last activations
// stay with oneDNN, whose NHWC depthwise kernels measured faster than a direct walk of the
// pixels (14.8 against 16-20 ms for the same convolution at one thread).
#pragma once

#include "ops/nn_ops.h"

namespace ignis::cpu {

/// Whether the direct kernels take this call: float32 or float64 operands, a depthwise
/// weight [C, 1, kH, kW] with groups == C, non-negative padding, and the activations `a`
/// and `b` (input and output, either way round) NCHW-contiguous.
bool depthwise_direct_fits(
    const Tensor& a, const Tensor& w, const Tensor& b, const detail::Conv2dParams& p);

void depthwise_forward(
    const Tensor& in,
    const Tensor& w,
    const Tensor& bias,
    const Tensor& out,
    const detail::Conv2dParams& p,
    bool relu);
void depthwise_backward_input(
    const Tensor& grad_out, const Tensor& w, const Tensor& grad_in, const detail::Conv2dParams& p);
/// grad_bias may be undefined.
void depthwise_backward_weight(
    const Tensor& grad_out,
    const Tensor& in,
    const Tensor& grad_w,
    const Tensor& grad_bias,
    const detail::Conv2dParams& p);

}  // namespace ignis::cpu
