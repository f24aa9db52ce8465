// Kernel slots of the convolutional-network family (src/ops/nn_ops.h). The front ends have
// checked every argument, allocated the outputs (in the input's layout: NCHW-contiguous or
// channels-last for 4-D tensors, contiguous otherwise) and converted half/bfloat16 to float32;
// kernels see float32 or float64 only, except convolutions, which also see bfloat16 (and
// float16 on CUDA) where the backend computes in it (src/ops/conv.cpp, prepare), and batch
// norm, which takes bfloat16/float16 activations with float32 parameters (Note [Batch norm on
// 16-bit inputs]). Gradient outputs of *_backward kernels are freshly allocated and
// uninitialised unless said otherwise.
#pragma once

#include <vector>

#include "core/dispatch.h"
#include "kernels/batch_norm_math.h"
#include "ops/nn_ops.h"

namespace ignis::detail {

// ---- convolution (filled only when oneDNN is available) -----------------------------------
// Tensors: input/grad_input [N, C, H, W], weight/grad_weight [O, C / groups, kH, kW]
// (each NCHW-contiguous or channels-last, independently of the activations), output/grad_out
// [N, O, Ho, Wo]. Sizes are consistent with p, so that
// Ho = (H + pad + pad_end - d (k - 1) - 1) / s + 1 exactly (floor); pad_end may be negative
// (a transposed convolution's output_padding makes rows past the end unused).

/// output = conv(input, weight) + bias (bias may be undefined).
inline KernelSlot<void (*)(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Tensor& output, const Conv2dParams& p)>
    conv2d_forward_kernel{"conv2d"};
/// output = relu(conv(input, weight) + bias), the ReLU applied before the only store. Returns
/// false when the backend does not fuse this case; the caller then runs conv2d_forward_kernel
/// and a separate ReLU.
inline KernelSlot<bool (*)(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Tensor& output, const Conv2dParams& p)>
    conv2d_relu_forward_kernel{"conv2d_relu"};
/// grad_input = the adjoint of conv applied to grad_out (also the transposed convolution).
inline KernelSlot<void (*)(const Tensor& grad_out, const Tensor& weight, const Tensor& grad_input,
                           const Conv2dParams& p)>
    conv2d_backward_input_kernel{"conv2d_backward_input"};
/// grad_weight (and grad_bias = sum of grad_out over N, Ho, Wo when defined).
inline KernelSlot<void (*)(const Tensor& grad_out, const Tensor& input, const Tensor& grad_weight,
                           const Tensor& grad_bias, const Conv2dParams& p)>
    conv2d_backward_weight_kernel{"conv2d_backward_weight"};

/// What a backend needs to know to prefer a layout for a 2-D convolution.
struct ConvLayoutQuery {
  DType compute;  // the dtype the kernels will see
  int64_t groups, in_channels, out_channels, height, width;
};
/// Note [Preferred conv layout]: whether the backend runs this convolution faster with
/// channels-last activations when the user left input and weight contiguous. conv2d then
/// returns its result channels-last (the elementwise ops after it keep the layout). A user's
/// channels-last input or weight always gets channels-last; a device without an entry here
/// keeps contiguous results.
inline KernelSlot<bool (*)(const ConvLayoutQuery&)> conv2d_prefers_channels_last{
    "conv2d layout preference"};

// ---- resampling: pad and interpolate over the last two dims ---------------------------------
/// Where each output row (h) or column (w) of a 2-D resampling reads: source index i0 (-1:
/// the output takes `fill`, constant padding) and, for bilinear resampling, a second source
/// i1 with weight w1 (i0 then weighs 1 - w1, both rounded to the tensor's dtype).
struct ResampleAxis {
  std::vector<int64_t> i0, i1;
  std::vector<double> w1;
};
struct ResampleParams {
  ResampleAxis h, w;
  bool bilinear = false;
  double fill = 0;
};
/// in [N, C, H, W], out [N, C, Ho, Wo] (Ho = h.i0.size(), Wo = w.i0.size()), any strides.
inline KernelSlot<void (*)(const Tensor& in, const Tensor& out, const ResampleParams& p)>
    resample2d_forward_kernel{"resample2d"};
/// grad_in (zeroed by the kernel) accumulates grad_out along the same taps.
inline KernelSlot<void (*)(const Tensor& grad_out, const Tensor& grad_in, const ResampleParams& p)>
    resample2d_backward_kernel{"resample2d_backward"};

// ---- pooling -------------------------------------------------------------------------------
// 4-D tensors in either layout (kernels read strides); the stride in p is resolved.
inline KernelSlot<void (*)(const Tensor& input, const Tensor& output, const Tensor& indices,
                           const Pool2dParams& p)>
    max_pool2d_forward_kernel{"max_pool2d"};
/// grad_input is zeroed by the kernel, then accumulated. A device kernel may take 16-bit
/// tensors (the front end passes them only when no two windows overlap, so each element of
/// grad_input takes at most one gradient: exact in any dtype).
inline KernelSlot<void (*)(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_input)>
    max_pool2d_backward_kernel{"max_pool2d_backward"};
inline KernelSlot<void (*)(const Tensor& input, const Tensor& output, const Pool2dParams& p)>
    avg_pool2d_forward_kernel{"avg_pool2d"};
inline KernelSlot<void (*)(const Tensor& grad_out, const Tensor& grad_input, const Pool2dParams& p)>
    avg_pool2d_backward_kernel{"avg_pool2d_backward"};
inline KernelSlot<void (*)(const Tensor& input, const Tensor& output)> adaptive_avg_pool2d_forward_kernel{
    "adaptive_avg_pool2d"};
inline KernelSlot<void (*)(const Tensor& grad_out, const Tensor& grad_input)>
    adaptive_avg_pool2d_backward_kernel{"adaptive_avg_pool2d_backward"};

// ---- normalisation -------------------------------------------------------------------------
// Batch norm sees input as [N, C, S] through three strides (NCHW-contiguous: S-inner, or
// channels-last: C-inner); weight/bias/stats are contiguous [C] (undefined = absent). The
// epilogue (src/kernels/batch_norm_math.h) rides along with the normalising pass: forward
// writes relu(y [+ residual]) as the only output, and backward masks grad_out by the sign of
// that saved output inside its reductions and its input-gradient pass.

// Note [Batch norm on 16-bit inputs] (src/kernels/batch_norm_math.h): the input, output,
// residual, grad_out, grad_input and grad_residual have the input's dtype (float32, float64,
// bfloat16 or float16); weight, bias, running and saved statistics and grad_weight/grad_bias
// have kernels::BnParam's (float32 for the 16-bit inputs, the input's otherwise).

/// f.template operator()<T>() for the storage type T of a floating dtype (float, double,
/// BFloat16, Half): a batch norm's input, a device max pooling's elements.
template <class F>
void visit_floating_storage(DType t, const F& f) {
  switch (t) {
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float16: return f.template operator()<Half>();
    default: return f.template operator()<float>();
  }
}

struct BatchNormArgs {
  Tensor input, output, weight, bias, running_mean, running_var, save_mean, save_invstd;
  Tensor residual;  // AddRelu only: the input's shape, dtype and layout
  kernels::BnEpilogue epilogue = kernels::BnEpilogue::None;
  int64_t n = 0, c = 0, s = 0;
  bool training = true;
  double momentum = 0.1, eps = 1e-5;
};
inline KernelSlot<void (*)(const BatchNormArgs&)> batch_norm_forward_kernel{"batch_norm"};

struct BatchNormBackwardArgs {
  Tensor grad_out, input, weight, save_mean, save_invstd;  // grad_out in input's layout
  Tensor bias;           // Gelu: the forward's bias (the normalised value is recomputed)
  Tensor grad_input, grad_weight, grad_bias;  // grad_input in input's layout; all defined
  Tensor output;         // Relu/AddRelu: the forward's output, in input's layout (the mask)
  Tensor grad_residual;  // AddRelu, when wanted: the masked grad_out, in input's layout
  kernels::BnEpilogue epilogue = kernels::BnEpilogue::None;
  int64_t n = 0, c = 0, s = 0;
  bool training = true;
};
inline KernelSlot<void (*)(const BatchNormBackwardArgs&)> batch_norm_backward_kernel{
    "batch_norm_backward"};

/// Layer norm (groups = 0) and group norm on contiguous tensors viewed as [rows, cols]: each
/// row is normalised on its own. Layer norm: affine index = column. Group norm: a row is one
/// (n, g) pair of `channels_per_group` channels of `s` elements; affine index = channel.
struct RowNormArgs {
  Tensor input, output, weight, bias, mean, invstd;  // mean/invstd: `rows` contiguous values
  int64_t rows = 0, cols = 0;
  int64_t groups = 0, channels_per_group = 0, s = 0;
  double eps = 1e-5;
};
inline KernelSlot<void (*)(const RowNormArgs&)> row_norm_forward_kernel{"layer_norm"};

struct RowNormBackwardArgs {
  Tensor grad_out, input, weight, mean, invstd;
  Tensor grad_input, grad_weight, grad_bias;  // grad_weight/grad_bias defined iff weight is
  int64_t rows = 0, cols = 0;
  int64_t groups = 0, channels_per_group = 0, s = 0;
};
inline KernelSlot<void (*)(const RowNormBackwardArgs&)> row_norm_backward_kernel{
    "layer_norm_backward"};

}  // namespace ignis::detail
