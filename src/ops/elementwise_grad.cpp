// Backward formulas of the elementwise ops, written with ignis ops (so they run on any device
// and can be differentiated again). elementwise.cpp calls record_unary / record_binary /
// record_where right after the forward. Broadcasting and dtype promotion are undone by the
// engine (sum_to and a cast to each input's dtype), so formulas work in the output's shape.
#include <cmath>

#include "autograd/record.h"
#include "core/shape.h"
#include "ignis/ops.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"

namespace ignis::detail {

using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::UnaryParams;
using Grads = std::vector<Tensor>;

// Recorded like any binary op, so its own backward (for create_graph) exists.
Tensor relu_backward(const Tensor& g, const Tensor& out) {
  return binary_op(g, out, BinaryOp::relu_backward, kernels::BinaryKind::Arithmetic,
                   "relu_backward", {}, nullptr);
}

namespace {

/// g * other as the gradient of input `input` of a product, whose value is `self`: written
/// into the engine's destination for it (Note [Gradient destinations]; the engine offers one
/// only for a leaf, which self then is, of the destination's sizes) when the product needs no
/// reduction to self's shape. The scale goes into `other` when that is much smaller (a scalar
/// factor, as in x * w with a scalar x), else it costs a pass over the result (g has the
/// result's size).
Tensor product_gradient(const Tensor& g, const Tensor& other, size_t input, const Tensor& self) {
  const GradientDestination* d = gradient_destination(input);
  if (!d || broadcast_shape(g.sizes(), other.sizes(), "mul") != self.sizes())
    return mul(g, other);
  Tensor out = d->tensor;
  const bool scale_other = d->scale != 1 && other.numel() * 8 <= out.numel();
  binary_op(g, scale_other ? mul(other, d->scale) : other, BinaryOp::mul,
            kernels::BinaryKind::Arithmetic, "mul", {}, &out);
  if (d->scale != 1 && !scale_other) out.mul_(d->scale);
  return out;
}

/// A unary op applied to x for use inside backward formulas (e.g. gelu's derivative).
Tensor apply_unary(UnaryOp op, const Tensor& x) {
  return unary_op(x, op, kernels::OpKind::Floating, "backward", {}, nullptr);
}
}  // namespace

void record_unary(UnaryOp op, const char* name, const Tensor& x, const Tensor& out,
                  const UnaryParams& p) {
  auto one = [&](BackwardFn f, std::initializer_list<SaveSpec> saved) {
    record(name, {out}, {x}, saved, std::move(f));
  };
  switch (op) {
    case UnaryOp::neg: return one([](const Grads& g, const Grads&) { return Grads{neg(g[0])}; }, {});
    case UnaryOp::abs:
      return one([](const Grads& g, const Grads& s) { return Grads{mul(g[0], sign(s[0]))}; }, {save(x)});
    case UnaryOp::sign: return one([](const Grads& g, const Grads&) { return Grads{zeros_like(g[0])}; }, {});
    case UnaryOp::relu:
      return one([](const Grads& g, const Grads& s) { return Grads{relu_backward(g[0], s[0])}; },
                 {save_output(out)});
    case UnaryOp::clamp:
      return one(
          [p](const Grads& g, const Grads& s) {
            Tensor keep = ones_like(s[0], kBool);
            if (p.has_a) keep = logical_and(keep, ge(s[0], p.a));
            if (p.has_b) keep = logical_and(keep, le(s[0], p.b));
            return Grads{where(keep, g[0], Scalar(0))};
          },
          {save(x)});
    case UnaryOp::exp:
      return one([](const Grads& g, const Grads& s) { return Grads{mul(g[0], s[0])}; }, {save_output(out)});
    case UnaryOp::log:
      return one([](const Grads& g, const Grads& s) { return Grads{div(g[0], s[0])}; }, {save(x)});
    case UnaryOp::log1p:
      return one([](const Grads& g, const Grads& s) { return Grads{div(g[0], add(s[0], 1))}; }, {save(x)});
    case UnaryOp::expm1:
      return one([](const Grads& g, const Grads& s) { return Grads{mul(g[0], add(s[0], 1))}; },
                 {save_output(out)});
    case UnaryOp::sqrt:
      return one([](const Grads& g, const Grads& s) { return Grads{div(g[0], mul(s[0], 2))}; },
                 {save_output(out)});
    case UnaryOp::rsqrt:
      return one(
          [](const Grads& g, const Grads& s) { return Grads{mul(mul(g[0], pow(s[0], 3)), -0.5)}; },
          {save_output(out)});
    case UnaryOp::sin:
      return one([](const Grads& g, const Grads& s) { return Grads{mul(g[0], cos(s[0]))}; }, {save(x)});
    case UnaryOp::cos:
      return one([](const Grads& g, const Grads& s) { return Grads{neg(mul(g[0], sin(s[0])))}; }, {save(x)});
    case UnaryOp::tanh:
      return one(
          [](const Grads& g, const Grads& s) { return Grads{mul(g[0], (1.0 - mul(s[0], s[0])))}; },
          {save_output(out)});
    case UnaryOp::sigmoid:
      return one(
          [](const Grads& g, const Grads& s) { return Grads{mul(g[0], mul(s[0], (1.0 - s[0])))}; },
          {save_output(out)});
    case UnaryOp::gelu:
      return one(
          [](const Grads& g, const Grads& s) { return Grads{mul(g[0], apply_unary(UnaryOp::gelu_grad, s[0]))}; },
          {save(x)});
    case UnaryOp::gelu_tanh:
      return one(
          [](const Grads& g, const Grads& s) {
            return Grads{mul(g[0], apply_unary(UnaryOp::gelu_tanh_grad, s[0]))};
          },
          {save(x)});
    case UnaryOp::silu:
      return one(
          [](const Grads& g, const Grads& s) {
            Tensor sg = sigmoid(s[0]);
            return Grads{mul(g[0], mul(sg, add(mul(s[0], (1.0 - sg)), 1)))};
          },
          {save(x)});
    case UnaryOp::softplus:
      return one(
          [p](const Grads& g, const Grads& s) {
            Tensor bx = mul(s[0], p.a);
            return Grads{where(gt(bx, p.b), g[0], mul(g[0], sigmoid(bx)))};
          },
          {save(x)});
    case UnaryOp::reciprocal:
      return one([](const Grads& g, const Grads& s) { return Grads{neg(mul(g[0], mul(s[0], s[0])))}; },
                 {save_output(out)});
    default: return;  // predicates and internal derivative ops: not differentiable
  }
}

void record_binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b,
                   const Tensor& out, double alpha) {
  auto two = [&](BackwardFn f, std::initializer_list<SaveSpec> saved) {
    record(name, {out}, {a, b}, saved, std::move(f));
  };
  switch (op) {
    case BinaryOp::add:
      return two([alpha](const Grads& g, const Grads&) { return Grads{g[0], alpha == 1 ? g[0] : mul(g[0], alpha)}; }, {});
    case BinaryOp::relu_backward:  // linear in the gradient; the mask has none
      return two([](const Grads& g, const Grads& s) { return Grads{relu_backward(g[0], s[0]), Tensor()}; },
                 {save(b)});
    case BinaryOp::sub:
      return two([alpha](const Grads& g, const Grads&) { return Grads{g[0], mul(g[0], -alpha)}; }, {});
    case BinaryOp::mul:
      return two(
          [](const Grads& g, const Grads& s) {
            return Grads{product_gradient(g[0], s[1], 0, s[0]),
                         product_gradient(g[0], s[0], 1, s[1])};
          },
          {save(a), save(b)});
    case BinaryOp::div:
      return two(
          [](const Grads& g, const Grads& s) {
            Tensor ga = div(g[0], s[1]);
            return Grads{ga, neg(mul(ga, div(s[0], s[1])))};
          },
          {save(a), save(b)});
    case BinaryOp::pow:
      return two(
          [](const Grads& g, const Grads& s) {
            const Tensor &base = s[0], &e = s[1], &out = s[2];
            Tensor ga = mul(g[0], mul(e, pow(base, sub(e, 1))));
            ga = where(eq(e, 0), Scalar(0), ga);
            // d/de base^e = base^e log(base), taken as 0 where base == 0 and e >= 0.
            Tensor gb = mul(g[0], mul(out, log(base)));
            gb = where(logical_and(eq(base, 0), ge(e, 0)), Scalar(0), gb);
            return Grads{ga, gb};
          },
          {save(a), save(b), save_output(out)});
    case BinaryOp::maximum:
    case BinaryOp::minimum: {
      const bool is_max = op == BinaryOp::maximum;
      return two(
          [is_max](const Grads& g, const Grads& s) {
            // Ties split the gradient in half, as PyTorch.
            Tensor tie = eq(s[0], s[1]);
            Tensor a_wins = is_max ? gt(s[0], s[1]) : lt(s[0], s[1]);
            Tensor half = mul(g[0], 0.5);
            Tensor ga = where(tie, half, where(a_wins, g[0], Scalar(0)));
            Tensor gb = where(tie, half, where(a_wins, Scalar(0), g[0]));
            return Grads{ga, gb};
          },
          {save(a), save(b)});
    }
    default: return;  // comparisons, logic, floor/trunc division: no gradient
  }
}

void record_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  record("where", {out}, {a, b}, {save(cond)}, [](const Grads& g, const Grads& s) {
    return Grads{where(s[0], g[0], Scalar(0)), where(s[0], Scalar(0), g[0])};
  });
}

}  // namespace ignis::detail
