// Loss functions of nn::functional as compositions of ignis ops, with PyTorch 1.13's exact
// reduction semantics (weighted means, ignore_index, label smoothing, log clamping).
#include <fmt/format.h>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "core/error.h"
#include "core/shape.h"
#include "ignis/nn/functional.h"
#include "nn/fused_losses.h"

namespace ignis::nn::functional {
using detail::autocast_fp32;
using detail::shape_str;
namespace {

/// Losses run in float32 under autocast (include/ignis/amp.h): the options' weights too.
template <class Options>
Options weights_fp32(Options o) {
  o.weight = autocast_fp32(o.weight);
  if constexpr (requires { o.pos_weight; }) o.pos_weight = autocast_fp32(o.pos_weight);
  return o;
}

Tensor reduce(const Tensor& loss, Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Sum: return loss.sum();
    case Reduction::Mean: return loss.mean();
    case Reduction::BatchMean: break;
  }
  throw ValueError(fmt::format("[{}] reduction BatchMean is only supported by kl_div", op));
}

void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  IGNIS_CHECK(input.sizes() == target.sizes(), ShapeError,
              "[{}] input {} and target {} must have the same shape", op,
              shape_str(input.sizes()), shape_str(target.sizes()));
}

void check_floating(const Tensor& t, const char* what, const char* op) {
  IGNIS_CHECK(is_floating(t.dtype()), DTypeError, "[{}] {} must be floating, got {}", op, what,
              dtype_name(t.dtype()));
}

// Log-probabilities gathered at class-index targets, with what the reductions need.
struct Picked {
  Tensor logp;     // [M, C]: the class dim moved last and the rest flattened
  Tensor ignore;   // [M] bool: target == ignore_index
  Tensor w_t;      // [M]: weight of each target's class, 0 where ignored
  Tensor loss;     // [M]: -w_t * logp[target], 0 where ignored
  Shape out_shape; // the target's shape (for Reduction::None)
};

/// The shape and dtype rules of class-index targets (and the class weight) for an input
/// whose class dim is 1 (0 for a 1-D input); returns the number of classes.
int64_t check_class_targets(const Tensor& logp, const Tensor& target, const Tensor& weight,
                            const char* op) {
  check_floating(logp, "input", op);
  IGNIS_CHECK(logp.dim() >= 1, ShapeError, "[{}] input must have a class dim, got a scalar", op);
  IGNIS_CHECK(is_integral(target.dtype()), DTypeError,
              "[{}] class-index targets must be integers, got {}", op, dtype_name(target.dtype()));
  const int64_t class_dim = logp.dim() == 1 ? 0 : 1;
  const int64_t C = logp.size(class_dim);
  Shape expected = logp.sizes();
  expected.erase(expected.begin() + class_dim);
  IGNIS_CHECK(target.sizes() == expected, ShapeError,
              "[{}] input {} expects target {}, got {}", op, shape_str(logp.sizes()),
              shape_str(expected), shape_str(target.sizes()));
  IGNIS_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == C), ShapeError,
              "[{}] weight must be 1-D with {} elements (one per class), got {}", op, C,
              shape_str(weight.defined() ? weight.sizes() : Shape{}));
  return C;
}

Picked pick_targets(const Tensor& logp, const Tensor& target, const Tensor& weight,
                    int64_t ignore_index, const char* op) {
  const int64_t C = check_class_targets(logp, target, weight, op);
  Picked r;
  Shape perm{0};
  for (int64_t d = 2; d < logp.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  r.logp = logp.dim() == 1 ? logp.unsqueeze(0)
                           : (logp.dim() == 2 ? logp : logp.permute(perm).reshape({-1, C}));
  Tensor t = target.to(kInt64).reshape({-1});
  r.ignore = t == Scalar(ignore_index);
  Tensor bad = logical_and(logical_not(r.ignore), logical_or(t < Scalar(0), t >= Scalar(C)));
  if (any(bad).item<bool>()) {
    const int64_t value = masked_select(t, bad)[0].item<int64_t>();
    throw IndexError(
        fmt::format("[{}] target {} is out of range for {} classes", op, value, C));
  }
  Tensor safe = where(r.ignore, Scalar(int64_t(0)), t);
  Tensor picked = gather(r.logp, 1, safe.unsqueeze(1)).squeeze(1).masked_fill(r.ignore, 0);
  Tensor keep = logical_not(r.ignore).to(logp.dtype());
  r.w_t = weight.defined() ? index_select(weight.to(logp.dtype()), 0, safe) * keep : keep;
  r.loss = -(picked * r.w_t);
  r.out_shape = target.sizes();
  return r;
}

// Sum, weighted mean (divided by the summed target weights) or the per-target values.
Tensor reduce_weighted(const Tensor& per_target, const Picked& p, Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return per_target.reshape(p.out_shape);
    case Reduction::Sum: return per_target.sum();
    case Reduction::Mean: return per_target.sum() / p.w_t.sum();
    case Reduction::BatchMean: break;
  }
  throw ValueError(fmt::format("[{}] reduction BatchMean is only supported by kl_div", op));
}

// The weight reshaped to broadcast along class_dim of an ndim tensor.
Tensor class_weight_view(const Tensor& weight, int64_t ndim, int64_t class_dim, DType dtype) {
  Shape s(size_t(ndim), 1);
  s[size_t(class_dim)] = weight.size(0);
  return weight.to(dtype).reshape(s);
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossOptions& opts) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return nll_loss(autocast_fp32(input), target, weights_fp32(opts));
  }
  Picked p = pick_targets(input, target, opts.weight, opts.ignore_index, "nll_loss");
  return reduce_weighted(p.loss, p, opts.reduction, "nll_loss");
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyOptions& opts) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return cross_entropy(autocast_fp32(input), autocast_fp32(target), weights_fp32(opts));
  }
  const char* op = "cross_entropy";
  check_floating(input, "input", op);
  IGNIS_CHECK(input.dim() >= 1, ShapeError, "[{}] input must have a class dim, got a scalar", op);
  const double ls = opts.label_smoothing;
  IGNIS_CHECK(ls >= 0 && ls <= 1, ValueError, "[{}] label_smoothing must be in [0, 1], got {}",
              op, ls);
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t C = input.size(class_dim);
  if (!is_floating(target.dtype())) {
    check_class_targets(input, target, opts.weight, op);
    Tensor fused = detail_loss::fused_cross_entropy(input, target, opts);
    if (fused.defined()) return fused;
  }
  Tensor logp = ignis::log_softmax(input, class_dim);

  if (is_floating(target.dtype())) {  // class probabilities
    check_same_shape(input, target, op);
    IGNIS_CHECK(!opts.weight.defined() || (opts.weight.dim() == 1 && opts.weight.size(0) == C),
                ShapeError, "[{}] weight must be 1-D with {} elements, got {}", op, C,
                shape_str(opts.weight.defined() ? opts.weight.sizes() : Shape{}));
    Tensor t = target.to(input.dtype());
    if (ls > 0) t = t * (1 - ls) + ls / double(C);
    Tensor prod = logp * t;
    if (opts.weight.defined())
      prod = prod * class_weight_view(opts.weight, input.dim(), class_dim, input.dtype());
    Tensor per = -prod.sum({class_dim});
    if (opts.reduction == Reduction::Mean) return per.sum() / double(input.numel() / C);
    return reduce(per, opts.reduction, op);
  }

  Picked p = pick_targets(logp, target, opts.weight, opts.ignore_index, op);
  Tensor nll = reduce_weighted(p.loss, p, opts.reduction, op);
  if (ls == 0) return nll;
  // Label smoothing adds ls/C times the (weighted) sum of -logp over all classes.
  Tensor all = opts.weight.defined() ? p.logp * opts.weight.to(input.dtype()) : p.logp;
  Tensor smooth = (-all.sum({1})).masked_fill(p.ignore, 0);
  return nll * (1 - ls) + reduce_weighted(smooth, p, opts.reduction, op) * (ls / double(C));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return mse_loss(autocast_fp32(input), autocast_fp32(target), reduction);
  }
  check_same_shape(input, target, "mse_loss");
  Tensor d = input - target;
  return reduce(d * d, reduction, "mse_loss");
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return l1_loss(autocast_fp32(input), autocast_fp32(target), reduction);
  }
  check_same_shape(input, target, "l1_loss");
  return reduce((input - target).abs(), reduction, "l1_loss");
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction,
                      double beta) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return smooth_l1_loss(autocast_fp32(input), autocast_fp32(target), reduction, beta);
  }
  check_same_shape(input, target, "smooth_l1_loss");
  IGNIS_CHECK(beta >= 0, ValueError, "[smooth_l1_loss] beta must be >= 0, got {}", beta);
  if (beta == 0) return l1_loss(input, target, reduction);
  Tensor d = (input - target).abs();
  return reduce(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction,
                "smooth_l1_loss");
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BCEOptions& opts) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return binary_cross_entropy(autocast_fp32(input), autocast_fp32(target), weights_fp32(opts));
  }
  const char* op = "binary_cross_entropy";
  check_same_shape(input, target, op);
  check_floating(input, "input", op);
  IGNIS_CHECK(!any(logical_or(input < Scalar(0), input > Scalar(1))).item<bool>(), ValueError,
              "[{}] all elements of input should be between 0 and 1", op);
  // PyTorch clamps each log at -100 so that x = 0 or 1 gives a finite loss. One node with
  // PyTorch's gradients: through the clamped logs, x = 0 or 1 gave 0 * inf = NaN, and
  // elsewhere -t / x grew without the bound x (1 - x) >= 1e-12 puts on it.
  Tensor loss;
  {
    NoGradGuard values_only;
    loss = -(target * clamp_min(log(input), -100) + (1 - target) * clamp_min(log(1 - input), -100));
  }
  if (detail::needs_grad({&input, &target}))
    detail::record(
        "binary_cross_entropy",
        {loss},
        {input, target},
        {detail::save(input), detail::save(target)},
        [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          const Tensor &x = s[0], &t = s[1];
          return std::vector<Tensor>{
              g[0] * (x - t) / clamp_min(x * (1 - x), 1e-12), g[0] * (log(1 - x) - log(x))};
        });
  if (opts.weight.defined()) loss = loss * opts.weight;
  return reduce(loss, opts.reduction, op);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEWithLogitsOptions& opts) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return binary_cross_entropy_with_logits(autocast_fp32(input), autocast_fp32(target),
                                            weights_fp32(opts));
  }
  const char* op = "binary_cross_entropy_with_logits";
  check_same_shape(input, target, op);
  check_floating(input, "input", op);
  // -log(sigmoid(x)) = softplus(-x), whose gradient sigmoid(x) - 1 holds at x = 0 too (the
  // composition log1p(exp(-|x|)) + relu(-x) lost its -0.5 there: abs' and relu' are 0 at 0).
  // Threshold 40 rather than 20: past it softplus returns its argument, and at -x = 21 the
  // dropped log1p(exp(-21)) is 7.6e-10, visible in float64.
  Tensor softplus_neg = ignis::softplus(-input, 1.0, 40.0);
  Tensor loss;
  if (opts.pos_weight.defined())
    loss = (1 - target) * input + ((opts.pos_weight - 1) * target + 1) * softplus_neg;
  else
    loss = (1 - target) * input + softplus_neg;
  if (opts.weight.defined()) loss = loss * opts.weight;
  return reduce(loss, opts.reduction, op);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivOptions& opts) {
  if (detail::autocast_pending()) {  // Note [Autocast applies once]
    detail::AutocastApplied once;
    return kl_div(autocast_fp32(input), autocast_fp32(target), opts);
  }
  const char* op = "kl_div";
  check_same_shape(input, target, op);
  check_floating(input, "input", op);
  Tensor loss;
  if (opts.log_target) {
    loss = exp(target) * (target - input);
  } else {
    // xlogy(t, t): 0 where t is 0; the inner where keeps log's gradient finite there.
    Tensor zero = target == Scalar(0);
    Tensor t_log_t = where(zero, Scalar(0.0), target * log(where(zero, Scalar(1.0), target)));
    loss = t_log_t - target * input;
  }
  if (opts.reduction == Reduction::BatchMean)
    return input.dim() == 0 ? loss.sum() : loss.sum() / double(input.size(0));
  return reduce(loss, opts.reduction, op);
}

}  // namespace ignis::nn::functional
