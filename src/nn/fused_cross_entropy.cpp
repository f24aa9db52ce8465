// cross_entropy with class-index targets as one graph node over two kernels
// (src/ops/loss_kernels.h has the formulas). The composition of log_softmax, gather, masks and
// reductions in loss.cpp computes the same values with ~15 ops and a host sync for the range
// check; for the small classifier heads that end most training steps, those ops cost more
// than the arithmetic. Backward runs the fused kernel, or, when the graph of the gradient is
// itself wanted (create_graph), the same formula written with differentiable ops.
#include <fmt/format.h>

#include "autograd/record.h"
#include "core/tensor_impl.h"
#include "nn/fused_losses.h"
#include "ops/loss_kernels.h"

namespace ignis::nn::functional::detail_loss {
using namespace ignis::detail;

namespace {
LossReduction to_kernel(Reduction r) {
  switch (r) {
    case Reduction::None: return LossReduction::None;
    case Reduction::Sum: return LossReduction::Sum;
    default: return LossReduction::Mean;
  }
}

/// The backward formula with ops, for create_graph. x [n, c], t [n] int64, w [c] or undefined;
/// the mean's divisor is divisor (a 0-dim tensor) when defined, else weight_sum.
Tensor grad_with_ops(const Tensor& g, const Tensor& x, const Tensor& t, const Tensor& w,
                     const CrossEntropyArgs& a, double weight_sum, const Tensor& divisor) {
  const int64_t C = a.c;
  Tensor keep = ne(t, Scalar(a.ignore_index));
  Tensor safe = where(keep, t, Scalar(int64_t(0)));
  Tensor keepf = keep.to(x.dtype()).unsqueeze(1);
  Tensor p = ignis::softmax(x, 1);
  Tensor onehot = one_hot(safe, C).to(x.dtype());
  Tensor w_t = w.defined() ? index_select(w, 0, safe).unsqueeze(1) : ones_like(keepf);
  const double eps = a.label_smoothing;
  Tensor d = (p - onehot) * w_t * (1 - eps);
  if (eps > 0) {
    const double w_all = w.defined() ? w.sum().item<double>() : double(C);
    Tensor wrow = w.defined() ? w.unsqueeze(0) : ones({1, C}, TensorOptions(x.dtype(), x.device()));
    d = d + (p * w_all - wrow) * (eps / double(C));
  }
  d = d * keepf;
  if (a.reduction == LossReduction::None) return d * g.reshape({-1, 1});
  if (a.reduction != LossReduction::Mean) return d * g;
  return divisor.defined() ? d * (g / divisor) : d * (g / weight_sum);
}
}  // namespace

Tensor fused_cross_entropy(const Tensor& input, const Tensor& target,
                           const CrossEntropyOptions& opts) {
  if (input.dim() > 2 || (input.dtype() != kFloat32 && input.dtype() != kFloat64) ||
      !cross_entropy_forward_kernel.has(input.device().type) ||
      opts.reduction == Reduction::BatchMean)
    return {};
  const bool one_row = input.dim() == 1;
  // What the kernel reads, made without recording (the node below is the only one) and
  // without new tensor handles where the inputs are already [n, c] / [n] int64 and
  // contiguous, as in most training steps.
  Tensor x, t, w;
  {
    NoGradGuard plain;
    x = (one_row ? input.unsqueeze(0) : input).contiguous();
    t = target.to(kInt64);
    if (t.dim() != 1) t = t.reshape({-1});
    t = t.contiguous();
    if (opts.weight.defined()) w = opts.weight.to(input.dtype()).contiguous();
  }
  CrossEntropyForward f;
  f.dtype = x.dtype();
  f.n = x.size(0);
  f.c = x.size(1);
  f.logits = x.data_ptr();
  f.target = t.data_ptr<int64_t>();
  f.weight = w.defined() ? w.data_ptr() : nullptr;
  f.ignore_index = opts.ignore_index;
  f.label_smoothing = opts.label_smoothing;
  f.reduction = to_kernel(opts.reduction);
  Tensor prob = make_tensor({f.n, f.c}, x.dtype(), x.device());
  Tensor out = f.reduction == LossReduction::None ? make_tensor(target.sizes(), x.dtype(), x.device())
                                                  : make_tensor({}, x.dtype(), x.device());
  f.prob = prob.data_ptr();
  f.out = out.data_ptr();
  // A device kernel leaves the divisor here, and reports bad targets later by itself.
  Tensor stats = x.is_cpu() ? Tensor() : make_tensor({2}, kFloat64, x.device());
  if (stats.defined()) f.device_stats = stats.data_ptr<double>();
  cross_entropy_forward_kernel.get(x.device())(f);
  if (f.bad_row >= 0)
    throw IndexError(fmt::format("[cross_entropy] target {} is out of range for {} classes",
                                 t[f.bad_row].item<int64_t>(), f.c));
  if (needs_grad({&input})) {
    const CrossEntropyArgs args = f;
    const double weight_sum = f.weight_sum;
    const Shape in_shape = input.sizes();
    // The input itself is saved (not the detached copy the kernel read) so the create_graph
    // formula's ops connect to it.
    record("cross_entropy", {out}, {input}, {save(input), save(prob)},
           [args, weight_sum, in_shape, t, w, stats](const Grads& g, const Grads& s) {
             if (is_grad_enabled()) {
               Tensor x2 = s[0].reshape({args.n, args.c});
               Tensor divisor =
                   stats.defined() ? stats.narrow(0, 0, 1).reshape({}).to(x2.dtype()) : Tensor();
               return Grads{
                   grad_with_ops(g[0], x2, t, w, args, weight_sum, divisor).reshape(in_shape)};
             }
             Tensor go = g[0].contiguous();
             Tensor gi = make_tensor({args.n, args.c}, s[0].dtype(), s[0].device());
             // An empty batch: nothing to compute, and with reduction None no gradient value
             // for the kernels to read.
             if (gi.numel() == 0) return Grads{gi.reshape(in_shape)};
             CrossEntropyBackward b;
             static_cast<CrossEntropyArgs&>(b) = args;
             b.prob = s[1].data_ptr();
             b.grad_out = go.data_ptr();
             b.weight_sum = weight_sum;
             b.device_weight_sum = stats.defined() ? stats.data_ptr<double>() : nullptr;
             b.grad_in = gi.data_ptr();
             cross_entropy_backward_kernel.get(gi.device())(b);
             return Grads{in_shape.size() == 2 ? gi : gi.reshape(in_shape)};
           });
  }
  return out;
}

}  // namespace ignis::nn::functional::detail_loss
