// Front ends of the indexing ops: index_select, gather, scatter (tensor or scalar source),
// scatter_add, index_add and their in-place forms, masked_fill / masked_select, one_hot and
// tril / triu. Each checks dtypes, shapes and (in a separate pass, before anything is
// written) every index value, then calls one kernel slot of src/ops/index_kernels.h.
// index_select and index_add are gather / scatter-add with the 1-D index expanded (stride 0)
// along the other dims; one_hot is a scatter of 1 into zeros; masked_fill reuses `where`.
#include <algorithm>
#include <limits>

#include "autograd/record.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/elementwise.h"
#include "ops/index_grad.h"
#include "ops/index_kernels.h"
#include "ops/write_checks.h"

namespace ignis {

using namespace detail;

namespace {

void check_defined(std::initializer_list<const Tensor*> ts, const char* op) {
  for (const Tensor* t : ts) IGNIS_CHECK(t->defined(), ValueError, "[{}] undefined tensor", op);
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  IGNIS_CHECK(a.device() == b.device(), DeviceError,
              "[{}] expected all tensors on the same device, but found {} and {}", op,
              a.device().str(), b.device().str());
}

/// gather/scatter take int64 indices only (as PyTorch); index_select/index_add also int32.
void check_index_dtype(const Tensor& index, bool allow_int32, const char* op) {
  const bool ok = index.dtype() == kInt64 || (allow_int32 && index.dtype() == kInt32);
  IGNIS_CHECK(ok, DTypeError, "[{}] expected an {} index, got {}", op,
              allow_int32 ? "int64 or int32" : "int64", dtype_name(index.dtype()));
}

/// Throws IndexError naming the first index value (row-major) outside [0, size).
void check_index_values(const Tensor& index, int64_t size, int64_t dim, const char* op) {
  if (index.numel() == 0) return;
  const IndexScan scan = index_scan_kernel.get(index.device())(index, size);
  IGNIS_CHECK(!scan.first_bad, IndexError,
              "[{}] index {} is out of bounds for dimension {} with size {}", op,
              scan.first_bad.value_or(0), dim, size);
}

/// 0-dim tensors take part in gather/scatter as 1-D tensors of one element (as PyTorch).
Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.unsqueeze(0) : t; }

/// A 1-D index of length sizes[dim] viewed with `sizes` (stride 0 along every other dim).
Tensor expand_index(const Tensor& index_1d, const Shape& sizes, int64_t dim) {
  Shape strides(sizes.size(), 0);
  strides[size_t(dim)] = index_1d.stride(0);
  return make_view(index_1d, sizes, strides, index_1d.storage_offset());
}

/// A view of t restricted to the leading `sizes` of each dim (t.size(d) >= sizes[d]).
Tensor leading_view(const Tensor& t, const Shape& sizes) {
  return make_view(t, sizes, t.strides(), t.storage_offset());
}

/// index must not exceed `other` in any dim (except `skip`, when skip >= 0).
void check_index_fits(const Tensor& index, const Tensor& other, int64_t skip, const char* what,
                      const char* op) {
  for (int64_t k = 0; k < index.dim(); ++k)
    IGNIS_CHECK(k == skip || index.size(k) <= other.size(k), ShapeError,
                "[{}] index of shape {} is larger than {} of shape {} in dimension {}{}", op,
                shape_str(index.sizes()), what, shape_str(other.sizes()), k,
                skip >= 0 ? fmt::format(" (only dimension {} may be larger)", skip) : "");
}

/// The shared core of scatter_, scatter_add_ and their out-of-place forms.
Tensor& scatter_impl(Tensor& self, int64_t dim, const Tensor& index_in, const Tensor* src_in,
                     const Scalar& value, ScatterReduce reduce, const char* op) {
  check_defined({&self, &index_in}, op);
  check_same_device(self, index_in, op);
  check_index_dtype(index_in, false, op);
  Tensor x = at_least_1d(self), index = at_least_1d(index_in), src;
  IGNIS_CHECK(index.dim() == x.dim(), ShapeError,
              "[{}] index must have as many dimensions as x: got index of shape {} for x of "
              "shape {}",
              op, shape_str(index_in.sizes()), shape_str(self.sizes()));
  const int64_t d = wrap_dim(dim, x.dim(), op);
  if (src_in) {
    check_defined({src_in}, op);
    check_same_device(self, *src_in, op);
    IGNIS_CHECK(src_in->dtype() == self.dtype(), DTypeError,
                "[{}] src must have the dtype of x ({}), got {}", op, dtype_name(self.dtype()),
                dtype_name(src_in->dtype()));
    src = at_least_1d(*src_in);
    IGNIS_CHECK(src.dim() == x.dim(), ShapeError,
                "[{}] src must have as many dimensions as x: got src of shape {} for x of shape "
                "{}",
                op, shape_str(src_in->sizes()), shape_str(self.sizes()));
    check_index_fits(index, src, -1, "src", op);
  }
  check_index_fits(index, x, d, "x", op);
  check_writable_layout(self, op);
  check_index_values(index, x.size(d), d, op);
  if (index.numel() == 0) return self;
  // Read sources that share memory with the destination from copies.
  if (index.is_same_storage(self)) index = index.clone();
  if (src.defined() && src.is_same_storage(self)) src = src.clone();
  ScatterArgs args{x, index, src.defined() ? leading_view(src, index.sizes()) : Tensor(), value, 1,
                   d, reduce};
  scatter_kernel.get(self.device())(args);
  return self;
}

/// The shared core of index_add_ and index_add.
Tensor& index_add_impl(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       const Scalar& alpha, const char* op) {
  check_defined({&self, &index, &source}, op);
  check_same_device(self, index, op);
  check_same_device(self, source, op);
  check_index_dtype(index, true, op);
  IGNIS_CHECK(index.dim() <= 1, ShapeError,
              "[{}] index must be a vector (at most 1-D), got shape {}", op,
              shape_str(index.sizes()));
  IGNIS_CHECK(source.dtype() == self.dtype(), DTypeError,
              "[{}] src must have the dtype of x ({}), got {}", op, dtype_name(self.dtype()),
              dtype_name(source.dtype()));
  Tensor x = at_least_1d(self), src = at_least_1d(source), index1 = at_least_1d(index);
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Shape expected = x.sizes();
  expected[size_t(d)] = index1.numel();
  IGNIS_CHECK(src.sizes() == expected, ShapeError,
              "[{}] src of shape {} does not fit x of shape {} with an index of length {} along "
              "dimension {} (expected src of shape {})",
              op, shape_str(source.sizes()), shape_str(self.sizes()), index1.numel(), d,
              shape_str(expected));
  check_writable_layout(self, op);
  check_index_values(index1, x.size(d), d, op);
  if (src.numel() == 0) return self;
  if (index1.is_same_storage(self)) index1 = index1.clone();
  if (src.is_same_storage(self)) src = src.clone();
  ScatterArgs args{x, expand_index(index1, src.sizes(), d), src, 0, alpha, d, ScatterReduce::Add};
  scatter_kernel.get(self.device())(args);
  return self;
}

/// The wrapped dim of x's at-least-1-D form (after the op has validated it).
int64_t wrapped(const Tensor& x, int64_t dim, const char* op) {
  return wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
}

/// A copy of x for an out-of-place op to write into; the op records itself afterwards.
Tensor fresh_copy(const Tensor& x) {
  GradModeScope no_grad(false);
  return x.clone();
}

void check_mask(const Tensor& mask, const char* op) {
  IGNIS_CHECK(mask.dtype() == kBool, DTypeError, "[{}] expected a bool mask, got {}", op,
              dtype_name(mask.dtype()));
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  check_defined({&x, &index}, op);
  check_same_device(x, index, op);
  check_index_dtype(index, true, op);
  IGNIS_CHECK(index.dim() <= 1, ShapeError,
              "[{}] index must be a vector (at most 1-D), got shape {}", op,
              shape_str(index.sizes()));
  Tensor x1 = at_least_1d(x), index1 = at_least_1d(index);
  const int64_t d = wrap_dim(dim, x1.dim(), op);
  IGNIS_CHECK(x.dim() > 0 || index1.numel() == 1, ShapeError,
              "[{}] a 0-dim x takes an index of one element, got {}", op, index1.numel());
  check_index_values(index1, x1.size(d), d, op);
  Shape out_shape = x1.sizes();
  out_shape[size_t(d)] = index1.numel();
  Tensor out = make_tensor(out_shape, x.dtype(), x.device());
  if (out.numel() > 0)
    gather_kernel.get(x.device())(GatherArgs{out, x1, expand_index(index1, out_shape, d), d});
  if (x.dim() == 0) out = out.squeeze(0);
  if (needs_grad({&x})) record_index_select(x, d, index, out);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "gather";
  check_defined({&x, &index}, op);
  check_same_device(x, index, op);
  check_index_dtype(index, false, op);
  Tensor x1 = at_least_1d(x), index1 = at_least_1d(index);
  IGNIS_CHECK(index1.dim() == x1.dim(), ShapeError,
              "[{}] index must have as many dimensions as x: got index of shape {} for x of "
              "shape {}",
              op, shape_str(index.sizes()), shape_str(x.sizes()));
  const int64_t d = wrap_dim(dim, x1.dim(), op);
  check_index_fits(index1, x1, d, "x", op);
  check_index_values(index1, x1.size(d), d, op);
  Tensor out = make_tensor(index1.sizes(), x.dtype(), x.device());
  if (out.numel() > 0) gather_kernel.get(x.device())(GatherArgs{out, x1, index1, d});
  if (index.dim() == 0) out = out.squeeze(0);
  if (needs_grad({&x})) record_gather(x, d, index, out);
  return out;
}

// Under autograd the in-place forms run their out-of-place form on a snapshot of x and take
// its history (inplace_with_autograd).
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (needs_grad({&x, &src}))
    return inplace_with_autograd(x, "scatter", [&](const Tensor& xb) { return scatter(xb, dim, index, src); });
  return scatter_impl(x, dim, index, &src, 0, ScatterReduce::Assign, "scatter_");
}
Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (needs_grad({&x, &src}))
    return inplace_with_autograd(x, "scatter_add",
                                 [&](const Tensor& xb) { return scatter_add(xb, dim, index, src); });
  return scatter_impl(x, dim, index, &src, 0, ScatterReduce::Add, "scatter_add_");
}
Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                   const Scalar& alpha) {
  if (needs_grad({&x, &src}))
    return inplace_with_autograd(
        x, "index_add", [&](const Tensor& xb) { return index_add(xb, dim, index, src, alpha); });
  return index_add_impl(x, dim, index, src, alpha, "index_add_");
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined({&x}, "scatter");
  Tensor out = fresh_copy(x);
  scatter_impl(out, dim, index, &src, 0, ScatterReduce::Assign, "scatter");
  if (needs_grad({&x, &src})) record_scatter("scatter", x, wrapped(x, dim, "scatter"), index, src, false, out);
  return out;
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  check_defined({&x}, "scatter");
  Tensor out = fresh_copy(x);
  scatter_impl(out, dim, index, nullptr, value, ScatterReduce::Assign, "scatter");
  if (needs_grad({&x})) record_scatter("scatter", x, wrapped(x, dim, "scatter"), index, Tensor(), false, out);
  return out;
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined({&x}, "scatter_add");
  Tensor out = fresh_copy(x);
  scatter_impl(out, dim, index, &src, 0, ScatterReduce::Add, "scatter_add");
  if (needs_grad({&x, &src}))
    record_scatter("scatter_add", x, wrapped(x, dim, "scatter_add"), index, src, true, out);
  return out;
}
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 const Scalar& alpha) {
  check_defined({&x}, "index_add");
  Tensor out = fresh_copy(x);
  index_add_impl(out, dim, index, src, alpha, "index_add");
  if (needs_grad({&x, &src})) record_index_add(x, wrapped(x, dim, "index_add"), index, src, alpha, out);
  return out;
}

// masked_fill is where(mask, value, x) with the value converted to x's dtype first (as
// PyTorch: a float value fills an integer tensor truncated). The out-of-place form broadcasts
// x and mask together; the in-place form needs mask to broadcast to x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  const char* op = "masked_fill";
  check_defined({&x, &mask}, op);
  check_same_device(x, mask, op);
  check_mask(mask, op);
  const Shape shape = broadcast_shape(x.sizes(), mask.sizes(), op);
  Tensor out = make_tensor(shape, x.dtype(), x.device());
  if (out.numel() == 0) {  // no values, but a node: an empty batch still backpropagates
    if (needs_grad({&x})) record_masked_fill(x, mask, out);
    return out;
  }
  Tensor v = scalar_like(value, x.dtype(), x.device(), "masked_fill").expand(shape);
  {
    GradModeScope no_grad(false);  // the expand views are plumbing; the op records itself
    Tensor xe = x.expand(shape), me = mask.expand(shape);
    where_kernel.get(x.device())(make_plan({&out, &me, &v, &xe}, op));
  }
  if (needs_grad({&x})) record_masked_fill(x, mask, out);
  return out;
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask_in, const Scalar& value) {
  const char* op = "masked_fill_";
  check_defined({&x, &mask_in}, op);
  check_same_device(x, mask_in, op);
  check_mask(mask_in, op);
  const Shape shape = broadcast_shape(x.sizes(), mask_in.sizes(), op);
  IGNIS_CHECK(shape == x.sizes(), ShapeError,
              "[{}] mask of shape {} does not broadcast to x of shape {}", op,
              shape_str(mask_in.sizes()), shape_str(x.sizes()));
  if (needs_grad({&x}))
    return inplace_with_autograd(x, "masked_fill",
                                 [&](const Tensor& xb) { return masked_fill(xb, mask_in, value); });
  check_writable_layout(x, op);
  if (x.numel() == 0) return x;
  Tensor mask = partially_overlaps(x, mask_in) ? mask_in.clone() : mask_in;
  Tensor v = scalar_like(value, x.dtype(), x.device(), op).expand(shape);
  Tensor me = mask.expand(shape);
  where_kernel.get(x.device())(make_plan({&x, &me, &v, &x}, op));
  return x;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const char* op = "masked_select";
  check_defined({&x, &mask}, op);
  check_same_device(x, mask, op);
  check_mask(mask, op);
  const Shape shape = broadcast_shape(x.sizes(), mask.sizes(), op);
  Tensor out;
  {
    GradModeScope no_grad(false);  // the expand views are plumbing; the op records itself
    out = masked_select_kernel.get(x.device())(x.expand(shape), mask.expand(shape));
  }
  if (needs_grad({&x})) record_masked_select(x, mask, out);
  return out;
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  const char* op = "one_hot";
  check_defined({&x}, op);
  IGNIS_CHECK(x.dtype() == kInt64, DTypeError,
              "[{}] expected an int64 tensor of class indices, got {}", op, dtype_name(x.dtype()));
  IGNIS_CHECK(num_classes >= -1, ValueError,
              "[{}] num_classes must be -1 (inferred) or non-negative, got {}", op, num_classes);
  IGNIS_CHECK(num_classes >= 0 || x.numel() > 0, ValueError,
              "[{}] cannot infer the number of classes from an empty tensor; pass num_classes", op);
  if (x.numel() > 0) {
    const int64_t hi = num_classes >= 0 ? num_classes : std::numeric_limits<int64_t>::max();
    const IndexScan scan = index_scan_kernel.get(x.device())(x, hi);
    IGNIS_CHECK(!scan.first_bad || *scan.first_bad >= 0, IndexError,
                "[{}] class values must be non-negative, got {}", op, scan.first_bad.value_or(0));
    IGNIS_CHECK(!scan.first_bad, IndexError,
                "[{}] class value {} is out of range for num_classes {}", op,
                scan.first_bad.value_or(0), num_classes);
    if (num_classes < 0) num_classes = scan.max + 1;
  }
  Shape shape = x.sizes();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, TensorOptions(kInt64, x.device()));
  if (out.numel() == 0) return out;
  const int64_t d = x.dim();
  scatter_kernel.get(x.device())(
      ScatterArgs{out, x.unsqueeze(-1), Tensor(), 1, 1, d, ScatterReduce::Assign});
  return out;
}

namespace {
Tensor trilu(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  check_defined({&x}, op);
  IGNIS_CHECK(x.dim() >= 2, ShapeError,
              "[{}] expects a tensor of at least 2 dimensions, got shape {}", op,
              shape_str(x.sizes()));
  // Past the matrix's own sizes every diagonal keeps all elements or none: clamped there, so
  // the kernels' row + diagonal cannot overflow (tril(x, INT64_MAX) is x).
  diagonal = std::clamp<int64_t>(diagonal, -x.size(-2), x.size(-1));
  Tensor out = make_tensor(x.sizes(), x.dtype(), x.device());
  if (out.numel() > 0) trilu_kernel.get(x.device())(TriluArgs{out, x, diagonal, lower});
  if (needs_grad({&x})) record_trilu(lower, diagonal, x, out);
  return out;
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return trilu(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return trilu(x, diagonal, false, "triu"); }

}  // namespace ignis
