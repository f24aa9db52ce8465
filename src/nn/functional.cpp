// nn::functional layer functions (linear, conv2d + ReLU, leaky_relu, dropout) as compositions
// of ignis ops; 2-D linear is one graph node, and so are 2-D linear and conv2d with a fused
// ReLU (below). Losses are in loss.cpp.
#include "ignis/nn/functional.h"

#include <fmt/format.h>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "core/error.h"
#include "core/shape.h"
#include "ops/linear_act_kernels.h"
#include "ops/nn_ops.h"

namespace ignis::nn::functional {
using detail::shape_str;

namespace {
void check_linear_args(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  IGNIS_CHECK(weight.dim() == 2, ShapeError, "[linear] weight must be 2-D [out, in], got {}",
              shape_str(weight.sizes()));
  IGNIS_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), ShapeError,
              "[linear] input {} does not fit weight {}: the last dim must be {}",
              shape_str(x.sizes()), shape_str(weight.sizes()), weight.size(1));
  IGNIS_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
              ShapeError, "[linear] bias {} does not fit weight {}", shape_str(bias.sizes()),
              shape_str(weight.sizes()));
}

using LinearForwardSlot = detail::KernelSlot<bool (*)(const detail::LinearForward&)>;

/// act(x W^T + b) for 2-D x through `slot`'s kernel (its activation), without recording; an
/// undefined tensor when the backend has no such kernel or it declines (dtype, shape). x and
/// weight are read through their strides.
Tensor linear_kernel_values(const LinearForwardSlot& slot, const Tensor& x, const Tensor& weight,
                            const Tensor& bias) {
  if (x.device() != weight.device() || x.dtype() != weight.dtype() ||
      !slot.has(x.device().type) ||
      (bias.defined() && (bias.dtype() != x.dtype() || bias.device() != x.device())))
    return {};
  const int64_t m = x.size(0), n = weight.size(0), k = x.size(1);
  if (m == 0 || n == 0 || k == 0) return {};
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out = empty({m, n}, TensorOptions(x.dtype(), x.device()));
  detail::LinearForward a;
  a.dtype = x.dtype();
  a.m = m, a.n = n, a.k = k;
  a.x = x.data_ptr(), a.x_rs = x.stride(0), a.x_cs = x.stride(1);
  a.w = weight.data_ptr(), a.w_rs = weight.stride(0), a.w_cs = weight.stride(1);
  a.bias = bc.defined() ? bc.data_ptr() : nullptr;
  a.out = out.data_ptr();
  a.device = x.device();
  return slot.get(x.device())(a) ? out : Tensor();
}

/// x W^T + b for 2-D x without recording: the backend's linear kernel, else one addmm (the
/// bias as the accumulator) or mm.
Tensor linear_values(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  NoGradGuard plain;
  if (Tensor out = linear_kernel_values(detail::linear_forward_kernel, x, weight, bias);
      out.defined())
    return out;
  return bias.defined() ? addmm(bias, x, weight.t()) : mm(x, weight.t());
}

/// {dx, dw, db} of out = x W^T + b (each undefined where not wanted) from the backend's
/// linear backward kernel; empty when it has none or declines (the caller uses mm and sum).
std::vector<Tensor> linear_kernel_grads(const Tensor& g, const Tensor& x, const Tensor& weight,
                                        bool gx, bool gw, bool gb) {
  if (!detail::linear_backward_kernel.has(g.device().type) || g.dim() != 2 ||
      g.dtype() != x.dtype() || g.dtype() != weight.dtype() || g.device() != x.device() ||
      g.device() != weight.device())
    return {};
  const int64_t m = x.size(0), n = weight.size(0), k = x.size(1);
  if (m == 0 || n == 0 || k == 0) return {};
  const Tensor gc = g.contiguous();
  const TensorOptions opts(g.dtype(), g.device());
  Tensor dx = gx ? empty({m, k}, opts) : Tensor();
  Tensor dw = gw ? empty({n, k}, opts) : Tensor();
  Tensor db = gb ? empty({n}, opts) : Tensor();
  detail::LinearBackward a;
  a.dtype = g.dtype();
  a.m = m, a.n = n, a.k = k;
  a.g = gc.data_ptr();
  a.x = x.data_ptr(), a.x_rs = x.stride(0), a.x_cs = x.stride(1);
  a.w = weight.data_ptr(), a.w_rs = weight.stride(0), a.w_cs = weight.stride(1);
  a.dx = gx ? dx.data_ptr() : nullptr;
  a.dw = gw ? dw.data_ptr() : nullptr;
  a.dbias = gb ? db.data_ptr() : nullptr;
  a.device = g.device();
  if (!detail::linear_backward_kernel.get(g.device())(a)) return {};
  return {dx, dw, db};
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return linear(detail::autocast_low(x), detail::autocast_low(weight), detail::autocast_low(bias));
  }
  check_linear_args(x, weight, bias);
  if (x.dim() == 2) {
    // One node whose backward writes the weight's gradient in the weight's own [out, in]
    // layout (gy^T x): recorded as addmm of weight.t(), that gradient would arrive transposed
    // and be copied on accumulation, and the t() and bias-broadcast nodes would run too.
    Tensor out = linear_values(x, weight, bias);
    if (detail::needs_grad({&x, &weight, &bias})) {
      const bool gx = x.requires_grad(), gw = weight.requires_grad(),
                 gb = bias.defined() && bias.requires_grad();
      detail::record("linear", {out}, {x, weight, bias}, {detail::save(x), detail::save(weight)},
                     [gx, gw, gb](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       if (!is_grad_enabled()) {
                         auto direct = linear_kernel_grads(g[0], s[0], s[1], gx, gw, gb);
                         if (!direct.empty()) return direct;
                       }
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

namespace {
/// relu(x W^T + b) for 2-D x, without recording: the fused kernel where it applies, else the
/// product followed by an in-place ReLU.
Tensor linear_relu_values(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  NoGradGuard plain;
  if (Tensor out = linear_kernel_values(detail::linear_relu_forward_kernel, x, weight, bias);
      out.defined())
    return out;
  Tensor out = linear(x, weight, bias);
  return out.relu_();
}

/// The gradient through the ReLU (g where y > 0) and, when wanted, its column sums (the bias
/// gradient): one fused pass where the backend has it, ops otherwise (and for create_graph,
/// so that the gradient itself can be differentiated).
std::pair<Tensor, Tensor> relu_mask_grad(const Tensor& g, const Tensor& y, bool want_bias) {
  if (!is_grad_enabled() && detail::relu_mask_backward_kernel.has(g.device().type) &&
      g.dtype() == y.dtype() && g.dim() == 2) {
    const Tensor gc = g.contiguous(), yc = y.contiguous();
    Tensor dz = empty_like(yc);
    Tensor db = want_bias ? empty({y.size(1)}, TensorOptions(y.dtype(), y.device())) : Tensor();
    detail::ReluMaskBackward a;
    a.dtype = y.dtype();
    a.m = y.size(0), a.n = y.size(1);
    a.g = gc.data_ptr(), a.y = yc.data_ptr(), a.dz = dz.data_ptr();
    a.dbias = want_bias ? db.data_ptr() : nullptr;
    a.device = y.device();
    if (detail::relu_mask_backward_kernel.get(g.device())(a)) return {dz, db};
  }
  Tensor dz = g * gt(y, 0).to(g.dtype());
  return {dz, want_bias ? dz.sum({0}) : Tensor()};
}

/// The weight and bias gradients of a linear + ReLU layer whose input needs none, from one
/// kernel that never stores the masked gradient; {} when the backend declines (the caller
/// then masks and multiplies).
std::pair<Tensor, Tensor> relu_masked_weight_grad(const Tensor& g, const Tensor& y,
                                                  const Tensor& x, bool want_bias) {
  if (is_grad_enabled() || !detail::relu_mask_weight_grad_kernel.has(g.device().type) ||
      g.dim() != 2 || g.dtype() != y.dtype() || x.dtype() != y.dtype() ||
      x.device() != y.device())
    return {};
  const Tensor gc = g.contiguous(), yc = y.contiguous();
  const TensorOptions opts(y.dtype(), y.device());
  Tensor dw = empty({y.size(1), x.size(1)}, opts);
  Tensor db = want_bias ? empty({y.size(1)}, opts) : Tensor();
  detail::ReluMaskWeightGrad a;
  a.dtype = y.dtype();
  a.m = y.size(0), a.n = y.size(1), a.k = x.size(1);
  a.g = gc.data_ptr(), a.y = yc.data_ptr();
  a.x = x.data_ptr(), a.x_rs = x.stride(0), a.x_cs = x.stride(1);
  a.dw = dw.data_ptr();
  a.dbias = want_bias ? db.data_ptr() : nullptr;
  if (a.m == 0 || a.n == 0 || a.k == 0 || !detail::relu_mask_weight_grad_kernel.get(g.device())(a))
    return {};
  return {dw, db};
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation act) {
  if (act == Activation::None) return linear(x, weight, bias);
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return linear(detail::autocast_low(x), detail::autocast_low(weight), detail::autocast_low(bias),
                  act);
  }
  check_linear_args(x, weight, bias);
  if (x.dim() != 2) return ignis::relu(linear(x, weight, bias));
  Tensor out = linear_relu_values(x, weight, bias);
  if (detail::needs_grad({&x, &weight, &bias})) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad(),
               gb = bias.defined() && bias.requires_grad();
    // The ReLU mask comes from the saved output (y > 0 exactly where the pre-activation is).
    detail::record(
        "linear_relu",
        {out},
        {x, weight, bias},
        {detail::save(x), detail::save(weight), detail::save_output(out)},
        [gx, gw, gb](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          if (!gx && gw) {
            auto [dw, db] = relu_masked_weight_grad(g[0], s[2], s[0], gb);
            if (dw.defined()) return std::vector<Tensor>{Tensor(), dw, db};
          }
          auto [dz, db] = relu_mask_grad(g[0], s[2], gb);
          if (!is_grad_enabled()) {
            auto direct = linear_kernel_grads(dz, s[0], s[1], gx, gw, false);
            if (!direct.empty()) return std::vector<Tensor>{direct[0], direct[1], db};
          }
          return std::vector<Tensor>{
              gx ? mm(dz, s[1]) : Tensor(), gw ? mm(dz.t(), s[0]) : Tensor(), db};
        });
  }
  return out;
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o,
              Activation act) {
  return detail::conv2d_node(x, weight, bias, o, act == Activation::ReLU);
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  // x > 0, not >= 0: PyTorch's gradient at 0 (and -0) is the slope.
  return where(x > 0, x, x * negative_slope);
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
