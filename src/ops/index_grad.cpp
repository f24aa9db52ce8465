// Backward formulas of the indexing ops, written with the indexing ops themselves (each one's
// gradient is another's forward: gather <-> scatter_add, index_select <-> index_add), so
// they can be differentiated again. 0-dim tensors take part as 1-D tensors of one element, as
// in the forward, and gradients are reshaped back at the end.
#include "ops/index_grad.h"

#include "autograd/record.h"
#include "ignis/ops.h"

namespace ignis::detail {

using Grads = std::vector<Tensor>;

namespace {

Shape at_least_1d(const Shape& s) { return s.empty() ? Shape{1} : s; }

/// t placed at the start of zeros of `sizes` (t.size(k) <= sizes[k]): the gradient of a src
/// that is larger than its index, whose trailing part the op never read.
Tensor pad_to(Tensor t, const Shape& sizes) {
  for (int64_t k = 0; k < t.dim(); ++k) {
    const int64_t missing = sizes[size_t(k)] - t.size(k);
    if (missing <= 0) continue;
    Shape zs = t.sizes();
    zs[size_t(k)] = missing;
    t = cat({t, zeros(zs, TensorOptions(t.dtype(), t.device()))}, k);
  }
  return t;
}

Tensor zeros_of(const Shape& sizes, const Tensor& like) {
  return zeros(sizes, TensorOptions(like.dtype(), like.device()));
}

}  // namespace

void record_index_select(const Tensor& x, int64_t d, const Tensor& index, const Tensor& out) {
  record("index_select", {out}, {x}, {save(index)}, [xs = x.sizes(), d](const Grads& g, const Grads& s) {
    const Shape x1 = at_least_1d(xs);
    Tensor idx = s[0].reshape({-1});
    Shape gs = x1;
    gs[size_t(d)] = idx.numel();
    return Grads{index_add(zeros_of(x1, g[0]), d, idx, g[0].reshape(gs)).reshape(xs)};
  });
}

void record_gather(const Tensor& x, int64_t d, const Tensor& index, const Tensor& out) {
  record("gather", {out}, {x}, {save(index)}, [xs = x.sizes(), d](const Grads& g, const Grads& s) {
    Tensor idx = s[0].reshape(at_least_1d(s[0].sizes()));
    Tensor g1 = g[0].reshape(idx.sizes());
    return Grads{scatter_add(zeros_of(at_least_1d(xs), g[0]), d, idx, g1).reshape(xs)};
  });
}

void record_scatter(const char* op, const Tensor& x, int64_t d, const Tensor& index,
                    const Tensor& src, bool add, const Tensor& out) {
  record(op, {out}, {x, src}, {save(index)},
         [xs = x.sizes(), ss = src.defined() ? src.sizes() : Shape{}, has_src = src.defined(), d,
          add](const Grads& g, const Grads& s) {
           Tensor idx = s[0].reshape(at_least_1d(s[0].sizes()));
           Tensor g1 = g[0].reshape(at_least_1d(xs));
           // Assigned positions no longer depend on x; added ones still do, with slope 1.
           Tensor gx = add ? g[0] : scatter(g1, d, idx, Scalar(0)).reshape(xs);
           Tensor gs;
           if (has_src) gs = pad_to(gather(g1, d, idx), at_least_1d(ss)).reshape(ss);
           return Grads{gx, gs};
         });
}

void record_index_add(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src,
                      const Scalar& alpha, const Tensor& out) {
  record("index_add", {out}, {x, src}, {save(index)},
         [xs = x.sizes(), ss = src.sizes(), d, alpha](const Grads& g, const Grads& s) {
           Tensor g1 = g[0].reshape(at_least_1d(xs));
           Tensor gs = index_select(g1, d, s[0].reshape({-1}));
           return Grads{g[0], mul(gs, alpha).reshape(ss)};
         });
}

void record_masked_fill(const Tensor& x, const Tensor& mask, const Tensor& out) {
  // The gradient is in the broadcast shape; the engine sums it down to x's.
  record("masked_fill", {out}, {x}, {save(mask)}, [](const Grads& g, const Grads& s) {
    return Grads{where(s[0], Scalar(0), g[0])};
  });
}

void record_masked_select(const Tensor& x, const Tensor& mask, const Tensor& out) {
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes());
  record("masked_select", {out}, {x}, {save(mask)}, [shape](const Grads& g, const Grads& s) {
    // The flat positions the forward read, in the order it read them; g goes back there.
    int64_t n = 1;
    for (int64_t k : shape) n *= k;
    Tensor flat = arange(n, TensorOptions(kInt64, g[0].device())).view(shape);
    Tensor pos = masked_select(flat, s[0].expand(shape));
    return Grads{index_add(zeros_of({n}, g[0]), 0, pos, g[0]).view(shape)};
  });
}

void record_trilu(bool lower, int64_t diagonal, const Tensor& x, const Tensor& out) {
  record(lower ? "tril" : "triu", {out}, {x}, {}, [lower, diagonal](const Grads& g, const Grads&) {
    return Grads{lower ? tril(g[0], diagonal) : triu(g[0], diagonal)};
  });
}

}  // namespace ignis::detail
