// Reductions: sum, mean, prod, max/min (whole, per dim with indices), argmax/argmin, amax/amin,
// var/std, norm, all/any, logsumexp. This file decides dims, output shape and dtype, checks
// arguments, builds the ReducePlan (Note [Reduce plan]) and makes one reduce_kernel call.
// softmax, log_softmax and cumsum live in softmax.cpp.
#include "amp/autocast_policy.h"
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/tensor_impl.h"
#include "autograd/record.h"
#include "ignis/ops.h"
#include "ops/reduce_grad.h"
#include "ops/reduce_kernels.h"

namespace ignis {

using namespace detail;

namespace detail {

ReducePlan make_reduce_plan(const Tensor& in, uint64_t mask, const Tensor* out,
                            const Tensor* indices, bool keep_order, const char* op) {
  struct Dim {
    int64_t size, stride, out_stride;
  };
  std::vector<Dim> kept, red;
  const Tensor& shape_ref = out ? *out : *indices;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (in.sizes()[d] == 1) continue;
    Dim dim{in.sizes()[d], in.strides()[d], shape_ref.strides()[d]};
    ((mask >> d) & 1 ? red : kept).push_back(dim);
  }
  // Larger strides first, so the innermost dim of each group steps through memory fastest.
  auto by_stride = [](const Dim& a, const Dim& b) { return a.stride > b.stride; };
  std::stable_sort(kept.begin(), kept.end(), by_stride);
  if (!keep_order) std::stable_sort(red.begin(), red.end(), by_stride);
  auto coalesce = [](std::vector<Dim>& dims) {
    std::vector<Dim> merged;
    for (const Dim& d : dims) {
      if (!merged.empty()) {
        Dim& prev = merged.back();
        if (prev.stride == d.stride * d.size && prev.out_stride == d.out_stride * d.size) {
          prev.size *= d.size;
          prev.stride = d.stride;
          prev.out_stride = d.out_stride;
          continue;
        }
      }
      merged.push_back(d);
    }
    if (merged.empty()) merged.push_back({1, 0, 0});
    dims = merged;
  };
  for (Dim& d : red) d.out_stride = 0;
  coalesce(kept);
  coalesce(red);
  IGNIS_CHECK(int(kept.size()) <= kMaxPlanDims && int(red.size()) <= kMaxPlanDims, ShapeError,
              "[{}] a tensor of shape {} whose layout needs more than {} dimensions after "
              "merging is not supported; call contiguous() first",
              op, shape_str(in.sizes()), kMaxPlanDims);
  ReducePlan p;
  p.nkept = int(kept.size());
  p.nred = int(red.size());
  for (int i = 0; i < p.nkept; ++i) {
    p.kept_sizes[i] = kept[size_t(i)].size;
    p.kept_strides[i] = kept[size_t(i)].stride;
    p.out_strides[i] = kept[size_t(i)].out_stride;
    p.num_outputs *= kept[size_t(i)].size;
  }
  for (int i = 0; i < p.nred; ++i) {
    p.red_sizes[i] = red[size_t(i)].size;
    p.red_strides[i] = red[size_t(i)].stride;
    p.num_reduced *= red[size_t(i)].size;
  }
  p.in = static_cast<const char*>(in.data_ptr());
  p.out = out ? static_cast<char*>(out->data_ptr()) : nullptr;
  p.indices = indices ? static_cast<char*>(indices->data_ptr()) : nullptr;
  p.in_dtype = in.dtype();
  p.device = in.device();
  p.out_dtype = out ? out->dtype() : kInt64;
  return p;
}

}  // namespace detail

namespace {

void check_defined(const Tensor& x, const char* op) {
  IGNIS_CHECK(x.defined(), ValueError, "[{}] undefined tensor", op);
}

void check_floating(const Tensor& x, const char* op) {
  IGNIS_CHECK(is_floating(x.dtype()), DTypeError,
              "[{}] expected a floating-point input, got {}; convert it first, e.g. "
              "x.to(kFloat32)",
              op, dtype_name(x.dtype()));
}

/// x's sizes with the reduced dims set to 1 (the keepdim shape).
Shape keepdim_shape(const Tensor& x, uint64_t mask) {
  Shape s = x.sizes();
  for (int64_t d = 0; d < x.dim(); ++d)
    if ((mask >> d) & 1) s[size_t(d)] = 1;
  return s;
}

/// The view of a keepdim-shaped result without the reduced dims (or itself when keepdim).
Tensor finish(const Tensor& out, uint64_t mask, bool keepdim) {
  if (keepdim) return out;
  Shape s;
  for (int64_t d = 0; d < out.dim(); ++d)
    if (!((mask >> d) & 1)) s.push_back(out.sizes()[size_t(d)]);
  return out.view(s);
}

/// Ops without an identity (max, argmax …) cannot reduce over a dim of size 0.
void check_nonempty(const Tensor& x, uint64_t mask, const char* op) {
  for (int64_t d = 0; d < x.dim(); ++d)
    IGNIS_CHECK(!((mask >> d) & 1) || x.sizes()[size_t(d)] != 0, IndexError,
                "[{}] cannot reduce over dimension {} of size 0 (input shape {}): the operation "
                "has no identity",
                op, d, shape_str(x.sizes()));
}

void run_kernel(const Tensor& x, const ReduceArgs& args, const char* op) {
  IGNIS_CHECK(reduce_kernel.has(x.device().type), NotImplementedError,
              "[{}] not implemented for {}", op, device_type_name(x.device().type));
  reduce_kernel.get(x.device())(args);
}

/// A value reduction of x over the dims in mask into a new tensor of out_dtype.
Tensor reduce_values(const Tensor& x, uint64_t mask, bool keepdim, ReduceOp op, DType out_dtype,
                     const char* name, double p = 2, double correction = 1) {
  Tensor out = make_tensor(keepdim_shape(x, mask), out_dtype, x.device());
  if (out.numel() > 0) {
    ReduceArgs args;
    args.plan = make_reduce_plan(x, mask, &out, nullptr, false, name);
    args.op = op;
    args.p = p;
    args.correction = correction;
    run_kernel(x, args, name);
  }
  return finish(out, mask, keepdim);
}

/// Index (and optionally value) reduction for argmax/argmin and max/min along a dim.
std::tuple<Tensor, Tensor> reduce_with_indices(const Tensor& x, uint64_t mask, bool keepdim,
                                               ReduceOp op, bool want_values, const char* name) {
  check_nonempty(x, mask, name);
  const Shape shape = keepdim_shape(x, mask);
  Tensor values = want_values ? make_tensor(shape, x.dtype(), x.device()) : Tensor();
  Tensor indices = make_tensor(shape, kInt64, x.device());
  if (indices.numel() > 0) {
    ReduceArgs args;
    args.plan = make_reduce_plan(x, mask, want_values ? &values : nullptr, &indices, true, name);
    args.op = op;
    run_kernel(x, args, name);
  }
  return {want_values ? finish(values, mask, keepdim) : Tensor(), finish(indices, mask, keepdim)};
}

/// The mask of one (wrapped) dim; a 0-dim tensor accepts dim 0 or -1 and reduces nothing.
uint64_t one_dim_mask(const Tensor& x, int64_t dim, const char* op) {
  const int64_t d = wrap_dim(dim, x.dim(), op);
  return x.dim() == 0 ? 0 : 1ull << d;
}

Tensor whole_extreme(const Tensor& x, ReduceOp op, const char* name) {
  check_defined(x, name);
  IGNIS_CHECK(x.numel() > 0, IndexError,
              "[{}] cannot reduce an empty tensor (shape {}): the operation has no identity; "
              "pass a dim to reduce along a non-empty dimension",
              name, shape_str(x.sizes()));
  const uint64_t mask = dims_mask({}, x.dim(), name);
  Tensor out = reduce_values(x, mask, false, op, x.dtype(), name);
  if (needs_grad({&x})) record_extreme(name, x, out, mask, false);
  return out;
}

std::tuple<Tensor, Tensor> extreme_along(const Tensor& x, int64_t dim, bool keepdim, ReduceOp op,
                                         const char* name) {
  check_defined(x, name);
  auto [values, indices] = reduce_with_indices(x, one_dim_mask(x, dim, name), keepdim, op, true, name);
  if (needs_grad({&x})) record_extreme_along(name, x, values, indices, dim, keepdim);
  return {values, indices};
}

Tensor arg_extreme(const Tensor& x, std::optional<int64_t> dim, bool keepdim, ReduceOp op,
                   const char* name) {
  check_defined(x, name);
  if (!dim) {
    IGNIS_CHECK(x.numel() > 0, IndexError,
                "[{}] cannot reduce an empty tensor (shape {}) without a dim", name,
                shape_str(x.sizes()));
  }
  const uint64_t mask = dim ? one_dim_mask(x, *dim, name) : dims_mask({}, x.dim(), name);
  return std::get<1>(reduce_with_indices(x, mask, keepdim, op, false, name));
}

Tensor amax_amin(const Tensor& x, const Shape& dims, bool keepdim, ReduceOp op, const char* name) {
  check_defined(x, name);
  const uint64_t mask = dims_mask(dims, x.dim(), name);
  check_nonempty(x, mask, name);
  Tensor out = reduce_values(x, mask, keepdim, op, x.dtype(), name);
  if (needs_grad({&x})) record_extreme(name, x, out, mask, keepdim);
  return out;
}

Tensor var_std(const Tensor& x, const Shape& dims, double correction, bool keepdim, ReduceOp op,
               const char* name) {
  check_defined(x, name);
  const uint64_t mask = dims_mask(dims, x.dim(), name);
  check_floating(x, name);
  Tensor out = reduce_values(x, mask, keepdim, op, x.dtype(), name, 2, correction);
  if (needs_grad({&x})) record_var_std(op == ReduceOp::Std, x, out, mask, keepdim, correction);
  return out;
}

Tensor all_any(const Tensor& x, const Shape& dims, bool keepdim, ReduceOp op, const char* name) {
  check_defined(x, name);
  return reduce_values(x, dims_mask(dims, x.dim(), name), keepdim, op, kBool, name);
}

}  // namespace

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  check_defined(x, "sum");
  if (!dtype && autocast_pending()) {  // float32 under autocast; Note [Autocast applies once]
    AutocastApplied once;
    return sum(autocast_fp32(x), dims, keepdim, dtype);
  }
  const uint64_t mask = dims_mask(dims, x.dim(), "sum");
  const bool integral = !is_floating(x.dtype());
  const DType out_dtype = dtype ? *dtype : integral ? kInt64 : x.dtype();
  // The kernel reads integers into an int64 sum, and floats into a sum of their own dtype;
  // any other requested dtype converts the input first (as torch.sum(x, dtype=...) does).
  const bool direct = out_dtype == x.dtype() || (integral && out_dtype == kInt64);
  Tensor in = direct ? x : x.to(out_dtype);
  Tensor out = reduce_values(in, mask, keepdim, ReduceOp::Sum, out_dtype, "sum");
  if (needs_grad({&in}))
    record("sum", {out}, {in}, {}, [sizes = in.sizes(), mask, keepdim](const auto& g, const auto&) {
      return std::vector<Tensor>{expand_reduced_grad(g[0], sizes, mask, keepdim)};
    });
  return out;
}

Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  check_defined(x, "mean");
  const uint64_t mask = dims_mask(dims, x.dim(), "mean");
  check_floating(x, "mean");
  Tensor out = reduce_values(x, mask, keepdim, ReduceOp::Mean, x.dtype(), "mean");
  if (needs_grad({&x})) {
    const int64_t count = out.numel() ? x.numel() / out.numel() : 0;
    record("mean", {out}, {x}, {}, [sizes = x.sizes(), mask, keepdim, count](const auto& g, const auto&) {
      return std::vector<Tensor>{expand_reduced_grad(div(g[0], double(count)), sizes, mask, keepdim)};
    });
  }
  return out;
}

Tensor prod(const Tensor& x, const Shape& dims, bool keepdim) {
  check_defined(x, "prod");
  if (autocast_pending()) {  // float32 under autocast; Note [Autocast applies once]
    AutocastApplied once;
    return prod(autocast_fp32(x), dims, keepdim);
  }
  const uint64_t mask = dims_mask(dims, x.dim(), "prod");
  Tensor out = reduce_values(x, mask, keepdim, ReduceOp::Prod,
                             is_floating(x.dtype()) ? x.dtype() : kInt64, "prod");
  if (needs_grad({&x})) record_prod(x, out, mask, keepdim);
  return out;
}

Tensor max(const Tensor& x) { return whole_extreme(x, ReduceOp::Max, "max"); }
Tensor min(const Tensor& x) { return whole_extreme(x, ReduceOp::Min, "min"); }

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_along(x, dim, keepdim, ReduceOp::ArgMax, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_along(x, dim, keepdim, ReduceOp::ArgMin, "min");
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(x, dim, keepdim, ReduceOp::ArgMax, "argmax");
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(x, dim, keepdim, ReduceOp::ArgMin, "argmin");
}

Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  return amax_amin(x, dims, keepdim, ReduceOp::Max, "amax");
}
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  return amax_amin(x, dims, keepdim, ReduceOp::Min, "amin");
}

Tensor var(const Tensor& x, const Shape& dims, double correction, bool keepdim) {
  return var_std(x, dims, correction, keepdim, ReduceOp::Var, "var");
}
Tensor std(const Tensor& x, const Shape& dims, double correction, bool keepdim) {
  return var_std(x, dims, correction, keepdim, ReduceOp::Std, "std");
}

Tensor norm(const Tensor& x, double p, const Shape& dims, bool keepdim) {
  check_defined(x, "norm");
  if (autocast_pending()) {  // float32 under autocast; Note [Autocast applies once]
    AutocastApplied once;
    return norm(autocast_fp32(x), p, dims, keepdim);
  }
  const uint64_t mask = dims_mask(dims, x.dim(), "norm");
  check_floating(x, "norm");
  IGNIS_CHECK(!std::isnan(p), ValueError, "[norm] the order p must not be nan");
  constexpr double inf = std::numeric_limits<double>::infinity();
  const ReduceOp op = p == 1     ? ReduceOp::NormL1
                      : p == 2   ? ReduceOp::NormL2
                      : p == inf ? ReduceOp::NormInf
                      : p == -inf ? ReduceOp::NormNegInf
                      : p == 0    ? ReduceOp::NormL0
                                  : ReduceOp::NormP;
  Tensor out = reduce_values(x, mask, keepdim, op, x.dtype(), "norm", p);
  if (needs_grad({&x})) record_norm(x, out, p, mask, keepdim);
  return out;
}

Tensor all(const Tensor& x, const Shape& dims, bool keepdim) {
  return all_any(x, dims, keepdim, ReduceOp::All, "all");
}
Tensor any(const Tensor& x, const Shape& dims, bool keepdim) {
  return all_any(x, dims, keepdim, ReduceOp::Any, "any");
}

Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim) {
  check_defined(x, "logsumexp");
  if (autocast_pending()) {  // float32 under autocast; Note [Autocast applies once]
    AutocastApplied once;
    return logsumexp(autocast_fp32(x), dims, keepdim);
  }
  const uint64_t mask = dims_mask(dims, x.dim(), "logsumexp");
  // Integers and bool become the default float dtype, as in PyTorch.
  const Tensor in = is_floating(x.dtype()) ? x : x.to(default_dtype());
  Tensor out = reduce_values(in, mask, keepdim, ReduceOp::LogSumExp, in.dtype(), "logsumexp");
  if (needs_grad({&in})) record_logsumexp(in, out, mask, keepdim);
  return out;
}

}  // namespace ignis
