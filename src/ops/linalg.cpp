// Linear algebra front ends: matmul (PyTorch's shape rules), mm, bmm, addmm, baddbmm, dot and
// outer. This file checks arguments, works out result shapes and dtypes, and reduces every
// product to one call of the batched GEMM slot (src/ops/linalg_kernels.h) with operands
// described by their strides — no data is copied or looped over here.
#include <algorithm>
#include <optional>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "core/shape.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/linalg_kernels.h"

namespace ignis {

using namespace detail;

namespace {

using Grads = std::vector<Tensor>;

/// The last two dims swapped (the transpose of each matrix of a batch).
Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

// ---------------------------------------------------------------------------------------------
// Argument checks shared by the ops.

void check_defined(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) IGNIS_CHECK(t->defined(), ValueError, "[{}] undefined tensor", op);
}

/// Same device, same dtype (PyTorch does not promote matrix products), not bool.
void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, {&a, &b});
  IGNIS_CHECK(a.device() == b.device(), DeviceError,
              "[{}] expected all tensors on the same device, but found {} and {}", op,
              a.device().str(), b.device().str());
  IGNIS_CHECK(a.dtype() == b.dtype(), DTypeError,
              "[{}] expected both operands to have the same dtype, got {} and {}", op,
              dtype_name(a.dtype()), dtype_name(b.dtype()));
  IGNIS_CHECK(a.dtype() != kBool, DTypeError,
              "[{}] matrix products of bool tensors are not supported (got {} and {})", op,
              dtype_name(a.dtype()), dtype_name(b.dtype()));
}

/// The `input` operand of addmm/baddbmm: same device and dtype as the factors; integer
/// products take integer alpha and beta only (as PyTorch).
void check_input(const char* op, const Tensor& input, const Tensor& a, const Scalar& beta,
                 const Scalar& alpha) {
  check_defined(op, {&input});
  IGNIS_CHECK(input.device() == a.device(), DeviceError,
              "[{}] expected all tensors on the same device, but found {} and {}", op,
              input.device().str(), a.device().str());
  IGNIS_CHECK(input.dtype() == a.dtype(), DTypeError,
              "[{}] expected input and both operands to have the same dtype, got {} and {}", op,
              dtype_name(input.dtype()), dtype_name(a.dtype()));
  IGNIS_CHECK(is_floating(a.dtype()) || (!alpha.is_floating() && !beta.is_floating()), DTypeError,
              "[{}] alpha and beta must be integers for {} tensors, got alpha = {} and "
              "beta = {}",
              op, dtype_name(a.dtype()), alpha.to_double(), beta.to_double());
}

/// Throws unless `input` broadcasts to `result` (without the result growing).
void check_input_broadcast(const char* op, const Tensor& input, const Shape& result) {
  bool ok = input.dim() <= int64_t(result.size());
  for (int64_t i = 1; ok && i <= input.dim(); ++i) {
    const int64_t s = input.size(-i);
    ok = s == 1 || s == result[result.size() - i];
  }
  IGNIS_CHECK(ok, ShapeError, "[{}] input of shape {} cannot be broadcast to the result shape {}",
              op, shape_str(input.sizes()), shape_str(result));
}

void check_inner(const char* op, const Tensor& a, const Tensor& b, int64_t ka, int64_t kb) {
  IGNIS_CHECK(ka == kb, ShapeError,
              "[{}] cannot multiply {} by {}: inner dimensions {} and {} differ", op,
              shape_str(a.sizes()), shape_str(b.sizes()), ka, kb);
}

// ---------------------------------------------------------------------------------------------
// Building the GEMM call.

/// Drops size-1 batch dimensions and merges neighbours that every operand steps through
/// evenly, so the common cases reach the kernel with zero or one batch dimension.
void coalesce_batch(GemmArgs& g) {
  GemmMatrix* ops[3] = {&g.a, &g.b, &g.c};
  Shape sizes;
  Shape strides[3];
  for (size_t d = 0; d < g.batch_sizes.size(); ++d) {
    const int64_t s = g.batch_sizes[d];
    if (s == 1) continue;
    bool merge = !sizes.empty();
    for (int i = 0; i < 3 && merge; ++i) merge = strides[i].back() == ops[i]->batch_strides[d] * s;
    if (merge) {
      sizes.back() *= s;
      for (int i = 0; i < 3; ++i) strides[i].back() = ops[i]->batch_strides[d];
    } else {
      sizes.push_back(s);
      for (int i = 0; i < 3; ++i) strides[i].push_back(ops[i]->batch_strides[d]);
    }
  }
  g.batch_sizes = std::move(sizes);
  for (int i = 0; i < 3; ++i) ops[i]->batch_strides = std::move(strides[i]);
}

/// Note [Folding a shared B into the rows]
/// When B is the same matrix for every entry of the innermost batch dimension (stride 0, as
/// for matmul of [batch, m, k] by [k, n]) and A's and C's rows continue evenly from one batch
/// entry to the next, that batch dimension is really more rows: one (batch*m, k) @ (k, n)
/// GEMM replaces a loop of small ones (PyTorch folds matmul of 3-D by 2-D the same way).
void fold_shared_b(GemmArgs& g) {
  while (!g.batch_sizes.empty()) {
    const int64_t sa = g.a.batch_strides.back(), sb = g.b.batch_strides.back(),
                  sc = g.c.batch_strides.back();
    // sa != 0: a shared A as well would turn into repeated rows, which BLAS cannot read.
    const bool rows_continue =
        sa != 0 && (g.m == 1 || (sa == g.m * g.a.row_stride && sc == g.m * g.c.row_stride));
    if (sb != 0 || !rows_continue) return;
    if (g.m == 1) g.a.row_stride = sa, g.c.row_stride = sc;
    g.m *= g.batch_sizes.back();
    g.batch_sizes.pop_back();
    for (GemmMatrix* x : {&g.a, &g.b, &g.c}) x->batch_strides.pop_back();
  }
}

GemmMatrix matrix_of(const Tensor& t) {
  GemmMatrix x;
  const int64_t nd = t.dim();
  x.data = t.data_ptr();
  x.batch_strides.assign(t.strides().begin(), t.strides().end() - 2);
  x.row_stride = t.stride(nd - 2);
  x.col_stride = t.stride(nd - 1);
  return x;
}

bool is_zero(const Scalar& s) { return s.to_double() == 0; }

/// out = beta * input + alpha * (a @ b), for a [batch..., m, k] and b [batch..., k, n] with
/// the same batch shape (already broadcast, stride 0 where shared). `input` (may be null)
/// broadcasts to the result [batch..., m, n], which is a new contiguous tensor.
Tensor gemm(const char* op, const Tensor& a, const Tensor& b, const Tensor* input,
            const Scalar& beta, const Scalar& alpha) {
  const int64_t nd = a.dim();
  const int64_t m = a.size(nd - 2), k = a.size(nd - 1), n = b.size(nd - 1);
  Shape out_shape(a.sizes().begin(), a.sizes().end() - 2);
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = make_tensor(out_shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  const bool read_input = input != nullptr && !is_zero(beta);
  if (read_input) {
    NoGradGuard plain;  // the calling op records the whole result, not this fill
    out.copy_(*input);
  }
  // An empty sum, or alpha = 0: beta * input, or zeros. The factors are not read, so NaN in
  // them is ignored as the BLAS standard intends — OpenBLAS 0.3.21 itself returns NaN for
  // small products with alpha = 0, so this cannot be left to the library.
  if (k == 0 || is_zero(alpha)) {
    if (!read_input)
      out.zero_();
    else if (beta.to_double() != 1)
      out.mul_(beta);
    return out;
  }
  IGNIS_CHECK(gemm_kernel.has(a.device().type), NotImplementedError, "[{}] not implemented for {}",
              op, device_type_name(a.device().type));
  GemmArgs g;
  g.dtype = a.dtype();
  g.device = a.device();
  g.batch_sizes = Shape(out_shape.begin(), out_shape.end() - 2);
  g.m = m, g.n = n, g.k = k;
  g.a = matrix_of(a), g.b = matrix_of(b), g.c = matrix_of(out);
  g.alpha = alpha;
  g.beta = read_input ? beta : Scalar(0);
  coalesce_batch(g);
  fold_shared_b(g);
  gemm_kernel.get(a.device())(g);
  return out;
}

/// The broadcast of two batch shapes, or nothing when they do not broadcast.
std::optional<Shape> broadcast_batch(const Shape& x, const Shape& y) {
  const size_t nd = std::max(x.size(), y.size());
  Shape r(nd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t sx = i < nd - x.size() ? 1 : x[i - (nd - x.size())];
    const int64_t sy = i < nd - y.size() ? 1 : y[i - (nd - y.size())];
    if (sx != sy && sx != 1 && sy != 1) return std::nullopt;
    r[i] = sx == 1 ? sy : sx;
  }
  return r;
}

Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The ops.

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return matmul(autocast_low(a), autocast_low(b));
  }
  check_operands("matmul", a, b);
  const int64_t da = a.dim(), db = b.dim();
  IGNIS_CHECK(da >= 1 && db >= 1, ShapeError,
              "[matmul] both arguments need at least one dimension, got {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  // A vector is a one-row (left) or one-column (right) matrix whose dim is removed afterwards.
  // Detached: these views are plumbing, the op records itself once below.
  const Tensor a2 = da == 1 ? a.detach().unsqueeze(0) : a.detach();
  const Tensor b2 = db == 1 ? b.detach().unsqueeze(1) : b.detach();
  check_inner("matmul", a, b, a2.size(-1), b2.size(-2));
  const Shape batch_a(a2.sizes().begin(), a2.sizes().end() - 2);
  const Shape batch_b(b2.sizes().begin(), b2.sizes().end() - 2);
  const std::optional<Shape> batch = broadcast_batch(batch_a, batch_b);
  IGNIS_CHECK(batch.has_value(), ShapeError,
              "[matmul] cannot multiply {} by {}: batch dimensions {} and {} do not broadcast",
              shape_str(a.sizes()), shape_str(b.sizes()), shape_str(batch_a), shape_str(batch_b));
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  const bool grad = needs_grad({&a, &b});
  // Broadcast batch dimensions get stride 0 (expand): never materialised, see
  // Note [Folding a shared B into the rows].
  Tensor out = gemm("matmul", a2.expand(with_matrix(*batch, m, k)),
                    b2.expand(with_matrix(*batch, k, n)), nullptr, 0, 1);
  Shape result = *batch;
  if (da > 1) result.push_back(m);
  if (db > 1) result.push_back(n);
  out = out.view(result);
  if (grad)
    record("matmul", {out}, {a, b}, {save(a), save(b)},
           [a2s = a2.sizes(), b2s = b2.sizes(), mn = with_matrix(*batch, m, n)](const Grads& g,
                                                                                const Grads& s) {
             // Work with the matrix forms (vectors as one-row / one-column matrices), reduce
             // the broadcast batch dims with sum_to and drop the added dim with reshape.
             Tensor g2 = g[0].reshape(mn);
             Tensor a2 = s[0].reshape(a2s), b2 = s[1].reshape(b2s);
             Tensor ga = sum_to(matmul(g2, mT(b2)), a2s).reshape(s[0].sizes());
             Tensor gb = sum_to(matmul(mT(a2), g2), b2s).reshape(s[1].sizes());
             return Grads{ga, gb};
           });
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return mm(autocast_low(a), autocast_low(b));
  }
  check_operands("mm", a, b);
  IGNIS_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "[mm] expected 2-D tensors, got {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  check_inner("mm", a, b, a.size(1), b.size(0));
  Tensor out = gemm("mm", a, b, nullptr, 0, 1);
  if (needs_grad({&a, &b}))
    record("mm", {out}, {a, b}, {save(a), save(b)},
           [ga = a.requires_grad(), gb = b.requires_grad()](const Grads& g, const Grads& s) {
             return Grads{ga ? mm(g[0], s[1].t()) : Tensor(), gb ? mm(s[0].t(), g[0]) : Tensor()};
           });
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return bmm(autocast_low(a), autocast_low(b));
  }
  check_operands("bmm", a, b);
  IGNIS_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError, "[bmm] expected 3-D tensors, got {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  IGNIS_CHECK(a.size(0) == b.size(0), ShapeError,
              "[bmm] cannot multiply {} by {}: batch sizes {} and {} differ", shape_str(a.sizes()),
              shape_str(b.sizes()), a.size(0), b.size(0));
  check_inner("bmm", a, b, a.size(2), b.size(1));
  Tensor out = gemm("bmm", a, b, nullptr, 0, 1);
  if (needs_grad({&a, &b}))
    record("bmm", {out}, {a, b}, {save(a), save(b)}, [](const Grads& g, const Grads& s) {
      return Grads{bmm(g[0], mT(s[1])), bmm(mT(s[0]), g[0])};
    });
  return out;
}

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return addmm(autocast_low(input), autocast_low(a), autocast_low(b), beta, alpha);
  }
  check_operands("addmm", a, b);
  check_input("addmm", input, a, beta, alpha);
  IGNIS_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError,
              "[addmm] expected 2-D tensors, got {} and {}", shape_str(a.sizes()),
              shape_str(b.sizes()));
  check_inner("addmm", a, b, a.size(1), b.size(0));
  check_input_broadcast("addmm", input, {a.size(0), b.size(1)});
  Tensor out = gemm("addmm", a, b, &input, beta, alpha);
  if (needs_grad({&input, &a, &b}))
    record("addmm", {out}, {input, a, b}, {save(a), save(b)},
           [beta, alpha, gi = input.requires_grad(), ga = a.requires_grad(),
            gb = b.requires_grad()](const Grads& g, const Grads& s) {
             // Gradients nobody needs are not computed (the GEMMs are most of the cost); a
             // factor of 1 is not multiplied in. input's gradient is in the result's shape:
             // the engine sums its broadcast dims.
             auto scaled = [](Tensor t, const Scalar& k) { return k.to_double() == 1 ? t : mul(t, k); };
             return Grads{gi ? scaled(g[0], beta) : Tensor(),
                          ga ? scaled(mm(g[0], s[1].t()), alpha) : Tensor(),
                          gb ? scaled(mm(s[0].t(), g[0]), alpha) : Tensor()};
           });
  return out;
}

Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return baddbmm(autocast_low(input), autocast_low(a), autocast_low(b), beta, alpha);
  }
  check_operands("baddbmm", a, b);
  check_input("baddbmm", input, a, beta, alpha);
  IGNIS_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError,
              "[baddbmm] expected 3-D tensors, got {} and {}", shape_str(a.sizes()),
              shape_str(b.sizes()));
  IGNIS_CHECK(a.size(0) == b.size(0), ShapeError,
              "[baddbmm] cannot multiply {} by {}: batch sizes {} and {} differ",
              shape_str(a.sizes()), shape_str(b.sizes()), a.size(0), b.size(0));
  check_inner("baddbmm", a, b, a.size(2), b.size(1));
  check_input_broadcast("baddbmm", input, {a.size(0), a.size(1), b.size(2)});
  Tensor out = gemm("baddbmm", a, b, &input, beta, alpha);
  if (needs_grad({&input, &a, &b}))
    record("baddbmm", {out}, {input, a, b}, {save(a), save(b)},
           [beta, alpha](const Grads& g, const Grads& s) {
             return Grads{mul(g[0], beta), mul(bmm(g[0], mT(s[1])), alpha),
                          mul(bmm(mT(s[0]), g[0]), alpha)};
           });
  return out;
}

Tensor dot(const Tensor& a, const Tensor& b) {
  check_operands("dot", a, b);
  IGNIS_CHECK(a.dim() == 1 && b.dim() == 1, ShapeError, "[dot] expected 1-D tensors, got {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  IGNIS_CHECK(a.size(0) == b.size(0), ShapeError,
              "[dot] cannot multiply {} by {}: lengths {} and {} differ", shape_str(a.sizes()),
              shape_str(b.sizes()), a.size(0), b.size(0));
  // Detached: the views are plumbing, dot records itself below.
  Tensor out = gemm("dot", a.detach().unsqueeze(0), b.detach().unsqueeze(1), nullptr, 0, 1).view({});
  if (needs_grad({&a, &b}))
    record("dot", {out}, {a, b}, {save(a), save(b)}, [](const Grads& g, const Grads& s) {
      return Grads{mul(g[0], s[1]), mul(g[0], s[0])};
    });
  return out;
}

/// A rank-1 product has no sum to accumulate: it is the broadcast product
/// a[:, None] * b[None, :], so it follows mul's promotion rules and accepts bool (as
/// torch.outer does).
Tensor outer(const Tensor& a, const Tensor& b) {
  check_defined("outer", {&a, &b});
  IGNIS_CHECK(a.device() == b.device(), DeviceError,
              "[outer] expected all tensors on the same device, but found {} and {}",
              a.device().str(), b.device().str());
  IGNIS_CHECK(a.dim() == 1 && b.dim() == 1, ShapeError,
              "[outer] expected 1-D tensors, got {} and {}", shape_str(a.sizes()),
              shape_str(b.sizes()));
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

}  // namespace ignis
