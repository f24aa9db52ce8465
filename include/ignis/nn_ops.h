// Convolution, pooling and normalisation as differentiable tensor functions (torch.conv2d,
// torch.nn.functional.max_pool2d, torch.batch_norm …). Inputs are [N, C, H, W] (pooling also
// takes [C, H, W]) in NCHW or channels-last layout; the output keeps the input's layout.
// Options are aggregates: conv2d(x, w, b, {.stride = {2, 2}, .padding = {1, 1}}).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <tuple>

#include "ignis/tensor.h"

namespace ignis {

/// (height, width)
using Size2 = std::array<int64_t, 2>;

struct Conv2dOptions {
  Size2 stride{1, 1};
  Size2 padding{0, 0};
  /// "same" or "valid" instead of numeric padding (as PyTorch's padding="same"); empty: use
  /// `padding`. "same" needs stride 1 and pads an odd total's extra row/column at the end.
  std::string padding_mode;
  Size2 dilation{1, 1};
  int64_t groups = 1;
};
/// input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O] or undefined.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dOptions& options = {});

struct ConvTranspose2dOptions {
  Size2 stride{1, 1};
  Size2 padding{0, 0};
  Size2 output_padding{0, 0};
  Size2 dilation{1, 1};
  int64_t groups = 1;
};
/// input [N, Cin, H, W], weight [Cin, Cout / groups, kH, kW] (PyTorch's layout), bias [Cout].
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const ConvTranspose2dOptions& options = {});

struct Pool2dOptions {
  Size2 kernel_size{1, 1};
  std::optional<Size2> stride;  ///< defaults to kernel_size
  Size2 padding{0, 0};
  Size2 dilation{1, 1};         ///< max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  ///< avg pooling only
  std::optional<int64_t> divisor_override;  ///< avg pooling only
};
Tensor max_pool2d(const Tensor& input, const Pool2dOptions& options);
/// Values and int64 indices (flat h * W + w within each plane, as PyTorch).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Pool2dOptions& options);
Tensor avg_pool2d(const Tensor& input, const Pool2dOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size);

/// Batch normalisation over dim 1 (torch.batch_norm's argument order). In training mode the
/// batch statistics normalise and, when given, running_mean/var are updated in place
/// (momentum, unbiased variance); in eval mode the running statistics normalise.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum = 0.1,
                  double eps = 1e-5);
/// relu(batch_norm(...) + residual) (residual optional: relu(batch_norm(...))) as one op with
/// one pass over memory each way: the same values, running-statistics update and gradients
/// as the composition. residual: the input's shape (ShapeError) and device; one of another
/// dtype makes the call compose the ops (add's promotion).
Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training,
                       double momentum = 0.1, double eps = 1e-5,
                       const Tensor& residual = Tensor());
/// gelu(batch_norm(...)) (the erf form) as one op with one pass over memory each way: the
/// same values, running-statistics update and gradients as the composition (up to the last
/// bit of float arithmetic). The backward recomputes the normalised value from the input, so
/// nothing more is kept than for batch_norm.
Tensor batch_norm_gelu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training,
                       double momentum = 0.1, double eps = 1e-5);
/// Normalises over the trailing dims normalized_shape.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
/// Normalises each of `groups` channel groups of [N, C, ...].
Tensor group_norm(const Tensor& input, int64_t groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

}  // namespace ignis
