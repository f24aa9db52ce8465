// Backward formulas of the reductions and of softmax, log_softmax and cumsum (see
// reduce_grad.h). Reductions record the keepdim shape they reduced to through `mask`; the
// helpers below put an output (or its gradient) back in a shape that broadcasts against x.
#include "ops/reduce_grad.h"

#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "ignis/ops.h"

namespace ignis::detail {

using Grads = std::vector<Tensor>;

Tensor expand_reduced_grad(const Tensor& g, const Shape& in_sizes, uint64_t mask, bool keepdim) {
  Tensor r = g;
  if (!keepdim)
    for (int64_t d = 0; d < int64_t(in_sizes.size()); ++d)
      if (mask >> d & 1) r = r.unsqueeze(d);
  return r.expand(in_sizes);
}

namespace {

/// The reduced dims as a list, for calling reductions inside formulas. A 0-dim input reduces
/// nothing, and an empty list reduces everything, which for 0-dim is the same.
Shape mask_dims(uint64_t mask, int64_t ndim) {
  Shape dims;
  for (int64_t d = 0; d < ndim; ++d)
    if (mask >> d & 1) dims.push_back(d);
  return dims;
}

/// A reduction result (or its gradient) with the reduced dims back as size 1, so that it
/// broadcasts against the input.
Tensor keep(const Tensor& t, int64_t ndim, uint64_t mask, bool keepdim) {
  Tensor r = t;
  if (!keepdim)
    for (int64_t d = 0; d < ndim; ++d)
      if (mask >> d & 1) r = r.unsqueeze(d);
  return r;
}

/// g split evenly among the positions where `hit` is true within each reduced group
/// (PyTorch's rule for amax/amin and whole-tensor max/min at ties).
Tensor split_among(const Tensor& g, const Tensor& hit, int64_t ndim, uint64_t mask, bool keepdim) {
  Tensor count = sum(hit, mask_dims(mask, ndim), /*keepdim=*/true);
  return where(hit, div(keep(g, ndim, mask, keepdim), count), Scalar(0));
}

}  // namespace

void record_prod(const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim) {
  record("prod", {out}, {x}, {save(x)}, [mask, keepdim](const Grads& g, const Grads& s) {
    const Tensor& x = s[0];
    const int64_t nd = x.dim();
    const Shape dims = mask_dims(mask, nd);
    // The product of the others is prod / x_i only where no factor of the group is zero. With
    // one zero, that position gets the product of the rest and the others 0; with two, the
    // zeros get 0 and the others 0; with more, all 0. Those zeros are written as the zero
    // factors themselves (zsum, zsum - zx: 0 in value), so that the formula keeps its
    // dependence on them and second derivatives come out right (PyTorch's prod_backward).
    Tensor zero = eq(x, 0);
    Tensor nzeros = sum(zero, dims, true);
    Tensor safe = where(zero, Scalar(1), x);
    Tensor rest = prod(safe, dims, true);
    Tensor zx = where(zero, x, Scalar(0));
    Tensor zsum = sum(zx, dims, true);
    Tensor one_zero = where(zero, rest, mul(zsum, div(rest, safe)));
    Tensor two_zeros = where(zero, mul(sub(zsum, zx), rest), Scalar(0));
    Tensor others = where(
        eq(nzeros, 0),
        div(rest, safe),
        where(eq(nzeros, 1), one_zero, where(eq(nzeros, 2), two_zeros, Scalar(0))));
    return Grads{mul(keep(g[0], nd, mask, keepdim), others)};
  });
}

void record_extreme(const char* op, const Tensor& x, const Tensor& out, uint64_t mask,
                    bool keepdim) {
  record(op, {out}, {x}, {save(x), save_output(out)}, [mask, keepdim](const Grads& g, const Grads& s) {
    const int64_t nd = s[0].dim();
    Tensor o = keep(s[1], nd, mask, keepdim);
    // A NaN extreme came from the group's NaNs: they share its gradient (PyTorch's
    // evenly_distribute_backward); eq alone would find no position at all.
    Tensor hit = logical_or(eq(s[0], o), logical_and(isnan(s[0]), isnan(o)));
    return Grads{split_among(g[0], hit, nd, mask, keepdim)};
  });
}

void record_extreme_along(const char* op, const Tensor& x, const Tensor& values,
                          const Tensor& indices, int64_t dim, bool keepdim) {
  const int64_t d = x.dim() == 0 ? 0 : (dim < 0 ? dim + x.dim() : dim);
  record(op, {values, indices}, {x}, {save(indices)},
         [sizes = x.sizes(), d, keepdim](const Grads& g, const Grads& s) {
           if (sizes.empty()) return Grads{g[0]};  // a 0-dim input is its own extreme
           Tensor gv = keepdim ? g[0] : g[0].unsqueeze(d);
           Tensor idx = keepdim ? s[0] : s[0].unsqueeze(d);
           Tensor z = zeros(sizes, TensorOptions(gv.dtype(), gv.device()));
           return Grads{scatter(z, d, idx, gv)};
         });
}

void record_var_std(bool is_std, const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim,
                    double correction) {
  // Elements per reduced group (an empty result has no gradient to compute anyway).
  const double n = out.numel() ? double(x.numel() / out.numel()) : 1;
  record(is_std ? "std" : "var", {out}, {x}, {save(x), save_output(out)},
         [is_std, mask, keepdim, n, correction](const Grads& g, const Grads& s) {
           const int64_t nd = s[0].dim();
           Tensor centred = sub(s[0], mean(s[0], mask_dims(mask, nd), true));
           Tensor gk = keep(g[0], nd, mask, keepdim);
           // d var / dx = 2 (x - mean) / (n - correction); d std = d var / (2 std).
           if (!is_std) return Grads{mul(mul(gk, centred), 2.0 / (n - correction))};
           Tensor sk = keep(s[1], nd, mask, keepdim);
           // A constant group (std 0) gets 0, not 0/0, as PyTorch masks it.
           return Grads{
               where(eq(sk, 0), Scalar(0), div(mul(gk, centred), mul(sk, n - correction)))};
         });
}

void record_norm(const Tensor& x, const Tensor& out, double p, uint64_t mask, bool keepdim) {
  record("norm", {out}, {x}, {save(x), save_output(out)}, [p, mask, keepdim](const Grads& g, const Grads& s) {
    const Tensor& x = s[0];
    const int64_t nd = x.dim();
    Tensor gk = keep(g[0], nd, mask, keepdim);
    Tensor nk = keep(s[1], nd, mask, keepdim);
    if (p == 0) return Grads{zeros_like(x)};
    if (p == 1) return Grads{mul(gk, sign(x))};
    if (std::isinf(p)) {
      // Like amax / amin of |x|: ties share the gradient evenly.
      Tensor hit = eq(abs(x), nk);
      return Grads{mul(split_among(g[0], hit, nd, mask, keepdim), sign(x))};
    }
    // d ||x||_p / dx = sign(x) |x|^(p-1) / ||x||^(p-1); taken as 0 where the norm is 0, and
    // where x is 0 (x |x|^(p-2) there is 0 * inf for p < 2).
    Tensor scaled =
        p == 2 ? div(x, nk)
               : where(eq(x, 0), Scalar(0), div(mul(sign(x), pow(abs(x), p - 1)), pow(nk, p - 1)));
    return Grads{where(eq(nk, 0), Scalar(0), mul(gk, scaled))};
  });
}

void record_logsumexp(const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim) {
  record("logsumexp", {out}, {x}, {save(x), save_output(out)}, [mask, keepdim](const Grads& g, const Grads& s) {
    const int64_t nd = s[0].dim();
    return Grads{mul(keep(g[0], nd, mask, keepdim), exp(sub(s[0], keep(s[1], nd, mask, keepdim))))};
  });
}

void record_softmax(bool log, const Tensor& x, const Tensor& out, int64_t d) {
  // A 0-dim input is one element: summing over "all dims" ({}) is then the same as over d.
  const Shape dims = x.dim() == 0 ? Shape{} : Shape{d};
  if (log)
    record("log_softmax", {out}, {x}, {save_output(out)}, [dims](const Grads& g, const Grads& s) {
      return Grads{sub(g[0], mul(exp(s[0]), sum(g[0], dims, true)))};
    });
  else
    record("softmax", {out}, {x}, {save_output(out)}, [dims](const Grads& g, const Grads& s) {
      return Grads{mul(s[0], sub(g[0], sum(mul(g[0], s[0]), dims, true)))};
    });
}

void record_cumsum(const Tensor& x, const Tensor& out, int64_t d) {
  const Shape dims = x.dim() == 0 ? Shape{} : Shape{d};
  // Element i feeds outputs i.. n-1, so its gradient is the reversed cumulative sum of g,
  // taken as such (total - cumsum(g) + g cancels: [1e8, 1, 1] in float32 lost its 1s, and an
  // infinite or NaN entry spread to every position).
  record("cumsum", {out}, {x}, {}, [dims, d](const Grads& g, const Grads&) {
    if (dims.empty()) return Grads{g[0]};
    const int64_t n = g[0].size(d);
    Tensor reversed = arange(n - 1, -1, -1, TensorOptions(kInt64, g[0].device()));
    return Grads{index_select(cumsum(index_select(g[0], d, reversed), d), d, reversed)};
  });
}

}  // namespace ignis::detail
