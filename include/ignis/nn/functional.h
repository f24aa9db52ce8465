// ignis::nn::functional: stateless layer functions and losses, written as compositions of
// ignis ops (their gradients come from the ops). Options are aggregates with PyTorch's names
// and defaults: `cross_entropy(logits, y, {.ignore_index = 3, .reduction = Reduction::Sum})`.
// Errors name the function: "[cross_entropy] target 12 is out of range for 10 classes".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ignis/ops.h"
#include "ignis/nn_ops.h"
#include "ignis/tensor.h"

namespace ignis::nn::functional {

/// How a loss reduces its elementwise values. BatchMean (sum / batch size) is kl_div's only.
enum class Reduction : uint8_t { None, Mean, Sum, BatchMean };

// ---- layers ----------------------------------------------------------------------------------
/// x W^T + b for x [*, in], weight [out, in], bias [out] (undefined: no bias).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
/// An activation applied by linear as part of the layer (one graph node, no extra pass).
enum class Activation : uint8_t { None, ReLU };
/// act(x W^T + b): the same values as act(linear(x, weight, bias)); on the CPU a 2-D float32
/// input with a thin weight takes the ReLU in the product's epilogue, on CUDA the bias rides
/// in cuBLASLt's epilogue; backward masks the gradient and sums the bias gradient in one pass.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation act);
/// act(conv2d(x, weight, bias, o)) as one graph node: on the CPU the ReLU is oneDNN's
/// post-op (applied before the output is stored, no second pass); elsewhere the convolution
/// is followed by an in-place ReLU. Backward masks the gradient by the saved output.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o,
              Activation act);
inline Tensor relu(const Tensor& x) { return ignis::relu(x); }
/// x for x >= 0, negative_slope * x otherwise.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
inline Tensor gelu(const Tensor& x, const std::string& approximate = "none") {
  return ignis::gelu(x, approximate);
}
inline Tensor silu(const Tensor& x) { return ignis::silu(x); }
inline Tensor softmax(const Tensor& x, int64_t dim) { return ignis::softmax(x, dim); }
inline Tensor log_softmax(const Tensor& x, int64_t dim) { return ignis::log_softmax(x, dim); }
/// When training: zeroes elements with probability p, scales the others by 1/(1-p);
/// otherwise returns x. p must be in [0, 1] (ValueError).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);

// ---- losses ----------------------------------------------------------------------------------
struct CrossEntropyOptions {
  Tensor weight;               ///< per-class weight [C] (undefined: all ones)
  int64_t ignore_index = -100; ///< targets equal to this add nothing (class-index targets)
  double label_smoothing = 0;  ///< in [0, 1]: mixes the target with the uniform distribution
  Reduction reduction = Reduction::Mean;
};
/// Cross entropy of logits [N, C] or [N, C, d1, ...] (or [C]) with either int64 class
/// indices [N, d1, ...] or floating class probabilities of the logits' shape. Mean divides
/// by the summed weights of the non-ignored targets (class indices) or by the number of
/// samples (probabilities), as PyTorch does.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& opts = {});

struct NLLLossOptions {
  Tensor weight;
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};
/// Negative log likelihood of log-probabilities [N, C, ...] at int64 class indices [N, ...].
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossOptions& opts = {});

/// (input - target)^2, reduced. Shapes must be equal (ShapeError).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// |input - target|, reduced.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (beta = 0 gives l1_loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);

struct BCEOptions {
  Tensor weight;  ///< broadcast to the input's shape (undefined: ones)
  Reduction reduction = Reduction::Mean;
};
/// -w [t log(x) + (1 - t) log(1 - x)] for probabilities x in [0, 1]; each log is clamped at
/// -100 as PyTorch does, so x = 0 or 1 gives finite values.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BCEOptions& opts = {});

struct BCEWithLogitsOptions {
  Tensor weight;      ///< broadcast to the input's shape
  Tensor pos_weight;  ///< weight of positive examples, broadcast over the last dim [C]
  Reduction reduction = Reduction::Mean;
};
/// binary_cross_entropy(sigmoid(x), t) in the stable form
/// (1 - t) x + l (log1p(exp(-|x|)) + relu(-x)), l = 1 + (pos_weight - 1) t: finite for any x.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEWithLogitsOptions& opts = {});

struct KLDivOptions {
  Reduction reduction = Reduction::Mean;  ///< BatchMean gives the true KL divergence
  bool log_target = false;                ///< target given as log-probabilities
};
/// Pointwise KL divergence target * (log(target) - input) for log-probabilities input
/// (0 where target is 0); log_target: exp(target) * (target - input).
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivOptions& opts = {});

}  // namespace ignis::nn::functional

// ---- convolution, pooling, normalisation, padding and resizing -----------------------------
namespace ignis::nn::functional {
using ignis::adaptive_avg_pool2d;
using ignis::avg_pool2d;
using ignis::batch_norm;
using ignis::batch_norm_gelu;
using ignis::batch_norm_relu;
using ignis::conv2d;
using ignis::conv_transpose2d;
using ignis::group_norm;
using ignis::layer_norm;
using ignis::max_pool2d;

/// Pads the last dims: pads = {left, right} for the last dim, then {top, bottom} for the one
/// before, … (PyTorch's order). mode "constant" (with value), "reflect" or "replicate";
/// negative pads crop.
Tensor pad(const Tensor& x, const Shape& pads, const std::string& mode = "constant",
           double value = 0);

struct InterpolateOptions {
  std::optional<Size2> size;          ///< output (height, width), or
  std::optional<double> scale_factor;  ///< output = floor(input * scale)
  std::string mode = "nearest";       ///< "nearest" or "bilinear"
  bool align_corners = false;          ///< bilinear only
};
/// Resizes [N, C, H, W] spatially, as torch.nn.functional.interpolate.
Tensor interpolate(const Tensor& x, const InterpolateOptions& options);
}  // namespace ignis::nn::functional
