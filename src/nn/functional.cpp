// nn::functional layer functions (linear, leaky_relu, dropout) as compositions of ignis ops;
// 2-D linear is one graph node (below). Losses are in loss.cpp.
#include <fmt/format.h>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "core/error.h"
#include "core/shape.h"
#include "ignis/nn/functional.h"

namespace ignis::nn::functional {
using detail::shape_str;

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return linear(detail::autocast_low(x), detail::autocast_low(weight), detail::autocast_low(bias));
  }
  IGNIS_CHECK(weight.dim() == 2, ShapeError, "[linear] weight must be 2-D [out, in], got {}",
              shape_str(weight.sizes()));
  IGNIS_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), ShapeError,
              "[linear] input {} does not fit weight {}: the last dim must be {}",
              shape_str(x.sizes()), shape_str(weight.sizes()), weight.size(1));
  IGNIS_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
              ShapeError, "[linear] bias {} does not fit weight {}", shape_str(bias.sizes()),
              shape_str(weight.sizes()));
  if (x.dim() == 2) {
    // One BLAS call (the bias is the accumulator) and one node whose backward writes the
    // weight's gradient in the weight's own [out, in] layout (gy^T x): recorded as addmm of
    // weight.t(), that gradient would arrive transposed and be copied on accumulation, and
    // the t() and bias-broadcast nodes would run too.
    Tensor out;
    {
      NoGradGuard plain;
      out = bias.defined() ? addmm(bias, x, weight.t()) : mm(x, weight.t());
    }
    if (detail::needs_grad({&x, &weight, &bias})) {
      const bool gx = x.requires_grad(), gw = weight.requires_grad(),
                 gb = bias.defined() && bias.requires_grad();
      detail::record("linear", {out}, {x, weight, bias}, {detail::save(x), detail::save(weight)},
                     [gx, gw, gb](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{gx ? mm(g[0], s[1]) : Tensor(),
                                                  gw ? mm(g[0].t(), s[0]) : Tensor(),
                                                  gb ? g[0].sum({0}) : Tensor()};
                     });
    }
    return out;
  }
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return where(x >= 0, x, x * negative_slope);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  IGNIS_CHECK(p >= 0 && p <= 1, ValueError,
              "[dropout] probability has to be between 0 and 1, but got {}", p);
  if (!training || p == 0) return x;
  IGNIS_CHECK(is_floating(x.dtype()), DTypeError, "[dropout] expects a floating input, got {}",
              dtype_name(x.dtype()));
  if (p == 1) return x * 0;  // keeps the graph (and NaN), as PyTorch's x * 0 mask does
  // The mask holds 0 or 1/(1-p) in x's dtype, so kept values are scaled exactly as PyTorch's.
  Tensor mask = empty_like(x).bernoulli_(1 - p, gen);
  mask.div_(1 - p);
  return x * mask;
}

}  // namespace ignis::nn::functional
