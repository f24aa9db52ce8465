// nn::functional layer functions (linear, leaky_relu, dropout) as compositions of ignis ops.
// Losses are in loss.cpp.
#include <fmt/format.h>

#include "core/error.h"
#include "core/shape.h"
#include "ignis/nn/functional.h"

namespace ignis::nn::functional {
using detail::shape_str;

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  IGNIS_CHECK(weight.dim() == 2, ShapeError, "[linear] weight must be 2-D [out, in], got {}",
              shape_str(weight.sizes()));
  IGNIS_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), ShapeError,
              "[linear] input {} does not fit weight {}: the last dim must be {}",
              shape_str(x.sizes()), shape_str(weight.sizes()), weight.size(1));
  IGNIS_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
              ShapeError, "[linear] bias {} does not fit weight {}", shape_str(bias.sizes()),
              shape_str(weight.sizes()));
  // addmm does the 2-D case in one BLAS call with the bias as the accumulator.
  if (x.dim() == 2 && bias.defined()) return addmm(bias, x, weight.t());
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
