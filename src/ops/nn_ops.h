// Internal API of the convolutional-network ops: 2-D convolution and transposed convolution,
// max/avg/adaptive-avg pooling, and batch/layer/group normalisation, each as a plain forward
// and a plain backward function (nothing is recorded for autograd here; the autograd layer
// wires these into its graph). Front ends live in src/ops/conv.cpp, pool.cpp and norm.cpp;
// the CPU kernels behind them in src/cpu (oneDNN for convolution, own loops for the rest).
// Shapes and semantics follow PyTorch's torch.nn.functional / ATen native ops.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "ignis/nn_ops.h"
#include "ignis/tensor.h"
#include "kernels/batch_norm_math.h"

namespace ignis::detail {

struct GradientDestination;  // src/autograd/meta.h

/// A (height, width) pair.
using Pair2 = std::array<int64_t, 2>;

// ---- convolution ---------------------------------------------------------------------------

/// Geometry of a 2-D convolution. `padding` pads the top/left edges and `padding_end` the
/// bottom/right ones; they differ only when "same" padding needs an odd total (PyTorch pads
/// the extra row/column at the end).
struct Conv2dParams {
  Pair2 stride{1, 1};
  Pair2 padding{0, 0};
  Pair2 padding_end{0, 0};
  Pair2 dilation{1, 1};
  int64_t groups = 1;
};

/// Symmetric numeric padding.
Conv2dParams conv2d_params(Pair2 stride, Pair2 padding, Pair2 dilation, int64_t groups);
/// PyTorch's string padding: "valid" (none) or "same" (output size = input size; stride must
/// be 1; total padding dilation * (kernel - 1), the odd extra at the end). Throws ValueError
/// for other strings or "same" with a stride other than 1.
Conv2dParams conv2d_params(Pair2 stride, const std::string& padding, Pair2 dilation,
                           int64_t groups, Pair2 kernel);
/// The parameters of conv2d's options (numeric or string padding) for this weight.
Conv2dParams conv2d_params(const Conv2dOptions& o, const Tensor& weight);

/// Which gradients a backward call computes (the others come back undefined).
struct ConvNeed {
  bool input = true, weight = true, bias = true;
};
struct ConvGrads {
  Tensor input, weight, bias;
};

/// input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O] or undefined -> [N, O, Ho, Wo]
/// in the input's memory layout (NCHW or channels-last). float32/float64 (half and bfloat16
/// compute in float32). Throws ShapeError/ValueError/DTypeError with "[conv2d] …" messages.
/// With relu, relu(conv2d) in one pass where the backend fuses it (oneDNN's post-op on the
/// CPU), else the convolution followed by an in-place ReLU.
Tensor conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p, bool relu = false);
/// conv2d as a graph node, with relu: relu(conv2d) as one node whose backward masks by the
/// saved output (ignis::conv2d and nn::functional::conv2d with Activation::ReLU).
Tensor conv2d_node(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dOptions& o, bool relu);
/// Gradients of conv2d_forward for grad_out [N, O, Ho, Wo]. The weight gradient, times the
/// destination's scale, is written into weight_out's tensor when that is laid out as the
/// gradient would be (Note [Gradient destinations]: the engine's offer), and is then that
/// tensor.
ConvGrads conv2d_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                          const Conv2dParams& p, ConvNeed need = {},
                          const GradientDestination* weight_out = nullptr);

struct ConvTranspose2dParams {
  Pair2 stride{1, 1};
  Pair2 padding{0, 0};
  Pair2 output_padding{0, 0};
  Pair2 dilation{1, 1};
  int64_t groups = 1;
};
/// input [N, Cin, H, W], weight [Cin, Cout / groups, kH, kW] (PyTorch's layout), bias [Cout]
/// -> [N, Cout, (H-1)s - 2p + d(k-1) + output_padding + 1, …]. output_padding must be smaller
/// than stride or dilation.
Tensor conv_transpose2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                const ConvTranspose2dParams& p);
ConvGrads conv_transpose2d_backward(const Tensor& grad_out, const Tensor& input,
                                    const Tensor& weight, const ConvTranspose2dParams& p,
                                    ConvNeed need = {});

// ---- pooling -------------------------------------------------------------------------------

/// Window of a 2-D pooling op. An unset stride means stride = kernel (PyTorch's default).
/// dilation is used by max pooling only; count_include_pad and divisor_override by avg only.
struct Pool2dParams {
  Pair2 kernel{1, 1};
  std::optional<Pair2> stride;
  Pair2 padding{0, 0};
  Pair2 dilation{1, 1};
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;
};

struct MaxPoolResult {
  Tensor output;
  Tensor indices;  // int64, flat h * W + w within each (n, c) plane, as PyTorch
};
/// input [N, C, H, W] or [C, H, W]; output and indices in the input's layout. The first
/// maximum of a window wins ties; NaN wins over numbers.
MaxPoolResult max_pool2d_forward(const Tensor& input, const Pool2dParams& p);
/// grad_input[plane][indices] += grad_out (same shapes as the forward's).
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& input, const Tensor& indices,
                           const Pool2dParams& p);
Tensor avg_pool2d_forward(const Tensor& input, const Pool2dParams& p);
Tensor avg_pool2d_backward(const Tensor& grad_out, const Tensor& input, const Pool2dParams& p);
/// Output cell o covers input rows floor(o * H / Ho) .. ceil((o + 1) * H / Ho) - 1.
Tensor adaptive_avg_pool2d_forward(const Tensor& input, Pair2 output_size);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& input);

// ---- normalisation -------------------------------------------------------------------------

struct NormResult {
  Tensor output;
  Tensor save_mean;    // batch norm [C]; layer norm input.shape[:axis] + 1s; group norm [N, G]
  Tensor save_invstd;  // same shape: 1 / sqrt(var + eps)
};
struct NormGrads {
  Tensor input, weight, bias;
  Tensor residual;  // batch norm with the AddRelu epilogue, when asked for
};
using kernels::BnEpilogue;

/// input [N, C, ...]; weight/bias/running stats [C] or undefined. Training normalises with the
/// batch statistics (biased variance) and, when running stats are given, updates them in
/// place: mean <- (1 - momentum) mean + momentum batch_mean, var likewise with the unbiased
/// batch variance. Eval normalises with the running stats (required) and returns them as
/// save_mean / save_invstd so that batch_norm_backward can use them. epilogue Relu returns
/// relu(y), AddRelu relu(y + residual) and Gelu gelu(y) (erf form) instead of y, written in
/// the same pass (residual: the input's shape, dtype and device;
/// ShapeError/DTypeError/DeviceError otherwise).
NormResult batch_norm_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Tensor& running_mean, const Tensor& running_var,
                              bool training, double momentum, double eps,
                              BnEpilogue epilogue = BnEpilogue::None,
                              const Tensor& residual = Tensor());
/// training = false: the statistics were constants (eval mode). With the Relu or AddRelu
/// epilogue, `output` is the forward's output: grad_out is masked where it is not positive,
/// and with want_residual the masked gradient comes back as the residual's gradient. With the
/// Gelu epilogue, `bias` is the forward's (the normalised value is recomputed from input).
NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                              const Tensor& save_mean, const Tensor& save_invstd, bool training,
                              BnEpilogue epilogue = BnEpilogue::None,
                              const Tensor& output = Tensor(), bool want_residual = false,
                              const Tensor& bias = Tensor());

/// Normalises over the trailing dims `normalized_shape`; weight/bias of that shape or undefined.
NormResult layer_norm_forward(const Tensor& input, const Shape& normalized_shape,
                              const Tensor& weight, const Tensor& bias, double eps);
NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                              const Shape& normalized_shape, const Tensor& save_mean,
                              const Tensor& save_invstd, const Tensor& weight);

/// input [N, C, ...] split into `groups` channel groups; weight/bias [C] or undefined.
NormResult group_norm_forward(const Tensor& input, int64_t groups, const Tensor& weight,
                              const Tensor& bias, double eps);
NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& input, int64_t groups,
                              const Tensor& save_mean, const Tensor& save_invstd,
                              const Tensor& weight);

}  // namespace ignis::detail
