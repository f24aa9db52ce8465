// Views: ops that return a tensor sharing storage with their input (view/reshape, permute,
// transpose, narrow/slice/select, expand, squeeze/unsqueeze, flatten/unflatten, as_strided).
// reshape copies only when no view can express the result, as in PyTorch.
#include <algorithm>
#include <numeric>

#include "autograd/record.h"
#include "core/error.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"

namespace ignis {

using detail::make_view;
using detail::shape_str;
using detail::wrap_dim;

namespace {

/// Resolves one -1 in a requested shape from the element count.
Shape infer_shape(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      IGNIS_CHECK(infer < 0, ShapeError, "[{}] only one dimension can be -1, got {}", op,
                  shape_str(shape));
      infer = int(i);
    } else {
      IGNIS_CHECK(out[i] >= 0, ShapeError, "[{}] invalid size {} in shape {}", op, out[i],
                  shape_str(shape));
      known *= out[i];
    }
  }
  if (infer >= 0) {
    IGNIS_CHECK(known != 0 && numel % known == 0, ShapeError,
                "[{}] shape {} is invalid for input of size {}", op, shape_str(shape), numel);
    out[infer] = numel / known;
  } else {
    IGNIS_CHECK(known == numel, ShapeError, "[{}] shape {} is invalid for input of size {}", op,
                shape_str(shape), numel);
  }
  return out;
}

/// Strides for viewing (sizes, strides) as new_sizes without copying, if possible
/// (the algorithm of PyTorch's computeStride: split/merge runs of contiguous dims).
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes) {
  const int64_t numel = detail::shape_numel(sizes);
  Shape out(new_sizes.size());
  if (numel == 0 || sizes.empty()) return detail::contiguous_strides(new_sizes);
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

/// Records a view op for autograd: `back` maps the view's gradient to the input's shape.
/// Gradients of expanded dims are summed by the engine (sum_to), so expand needs no formula.
Tensor recorded_view(const Tensor& self, Tensor v, const char* op,
                     std::function<Tensor(const Tensor&)> back) {
  if (detail::needs_grad({&self})) {
    detail::record(op, {v}, {self}, {}, [back = std::move(back)](const auto& g, const auto&) {
      return std::vector<Tensor>{back(g[0])};
    });
    detail::mark_differentiable_view(v);
  }
  return v;
}

/// Gradient of x.slice(dim, start, ..., step) for an input of shape `sizes`: g placed into
/// zeros. With a graph being recorded (create_graph) it uses index_add, which is
/// differentiable; otherwise it writes into a view of the zeros.
Tensor slice_backward(const Tensor& g, const Shape& sizes, int64_t dim, int64_t start,
                      int64_t step) {
  Tensor out = zeros(sizes, TensorOptions(g.dtype(), g.device()));
  const int64_t n = g.size(dim);
  if (n == 0) return out;
  if (is_grad_enabled() && g.requires_grad()) {
    Tensor idx = arange(start, start + step * n, step, TensorOptions(kInt64, g.device()));
    return index_add(out, dim, idx, g);
  }
  out.slice(dim, start, start + step * (n - 1) + 1, step).copy_(g);
  return out;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  Shape s = infer_shape(shape, numel(), "view");
  auto st = view_strides(sizes(), strides(), s);
  IGNIS_CHECK(st.has_value(), ShapeError,
              "[view] cannot view a tensor of shape {} and strides {} as {}: the layout is not "
              "compatible; use reshape() (which copies) instead",
              shape_str(sizes()), shape_str(strides()), shape_str(s));
  return recorded_view(*this, make_view(*this, s, *st, storage_offset()), "view",
                       [in = sizes()](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape s = infer_shape(shape, numel(), "reshape");
  if (auto st = view_strides(sizes(), strides(), s))
    return recorded_view(*this, make_view(*this, s, *st, storage_offset()), "reshape",
                         [in = sizes()](const Tensor& g) { return g.reshape(in); });
  return contiguous().view(s);
}

Tensor Tensor::permute(const Shape& dims) const {
  const int64_t n = dim();
  IGNIS_CHECK(int64_t(dims.size()) == n, ShapeError,
              "[permute] expected {} dims for a tensor of shape {}, got {}", n, shape_str(sizes()),
              shape_str(dims));
  Shape ns(n), nst(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = wrap_dim(dims[i], n, "permute");
    IGNIS_CHECK(!seen[d], IndexError, "[permute] dimension {} repeated in {}", d, shape_str(dims));
    seen[d] = true;
    ns[i] = sizes()[d];
    nst[i] = strides()[d];
  }
  Shape inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[wrap_dim(dims[i], n, "permute")] = i;
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset()), "permute",
                       [inverse](const Tensor& g) { return g.permute(inverse); });
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  const int64_t n = dim();
  if (n == 0) return recorded_view(*this, make_view(*this, {}, {}, storage_offset()), "transpose",
                                   [](const Tensor& g) { return g; });
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  Shape ns = sizes(), nst = strides();
  std::swap(ns[d0], ns[d1]);
  std::swap(nst[d0], nst[d1]);
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset()), "transpose",
                       [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

Tensor Tensor::t() const {
  IGNIS_CHECK(dim() <= 2, ShapeError, "[t] expects a tensor of at most 2 dims, got shape {}",
              shape_str(sizes()));
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  IGNIS_CHECK(dim() > 0, ShapeError, "[narrow] cannot narrow a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = sizes()[d];
  if (start < 0) start += n;
  IGNIS_CHECK(start >= 0 && length >= 0 && start + length <= n, IndexError,
              "[narrow] start {} and length {} are out of range for dimension {} of size {}",
              start, length, d, n);
  Shape ns = sizes();
  ns[d] = length;
  return recorded_view(*this, make_view(*this, ns, strides(), storage_offset() + start * strides()[d]),
                       "narrow", [in = sizes(), d, start](const Tensor& g) {
                         return slice_backward(g, in, d, start, 1);
                       });
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  IGNIS_CHECK(dim() > 0, ShapeError, "[slice] cannot slice a 0-dim tensor");
  IGNIS_CHECK(step > 0, ValueError, "[slice] step must be positive, got {}", step);
  d = wrap_dim(d, dim(), "slice");
  const int64_t n = sizes()[d];
  auto clampi = [n](int64_t v) {
    if (v < 0) v += n;
    return std::clamp<int64_t>(v, 0, n);
  };
  const int64_t s = clampi(start.value_or(0));
  const int64_t e = std::max(s, clampi(end.value_or(n)));
  Shape ns = sizes(), nst = strides();
  ns[d] = (e - s + step - 1) / step;
  nst[d] = strides()[d] * step;
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset() + s * strides()[d]),
                       "slice", [in = sizes(), d, s, step](const Tensor& g) {
                         return slice_backward(g, in, d, s, step);
                       });
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  IGNIS_CHECK(dim() > 0, IndexError, "[select] cannot index a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = sizes()[d];
  IGNIS_CHECK(index >= -n && index < n, IndexError,
              "[select] index {} is out of range for dimension {} of size {}", index, d, n);
  if (index < 0) index += n;
  Shape ns = sizes(), nst = strides();
  ns.erase(ns.begin() + d);
  nst.erase(nst.begin() + d);
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset() + index * strides()[d]),
                       "select", [in = sizes(), d, index](const Tensor& g) {
                         return slice_backward(g.unsqueeze(d), in, d, index, 1);
                       });
}

Tensor Tensor::expand(const Shape& shape) const {
  const int64_t n = int64_t(shape.size()), nd = dim();
  IGNIS_CHECK(n >= nd, ShapeError, "[expand] cannot expand shape {} to fewer dimensions {}",
              shape_str(sizes()), shape_str(shape));
  Shape ns(n), nst(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t j = i - (n - nd);
    const int64_t want = shape[i];
    if (j < 0) {
      IGNIS_CHECK(want >= 0, ShapeError, "[expand] size -1 is not allowed for a new leading "
                                         "dimension in {}", shape_str(shape));
      ns[i] = want;
      nst[i] = 0;  // Note [Broadcast strides are zero]
      continue;
    }
    const int64_t have = sizes()[j];
    if (want == -1 || want == have) {
      ns[i] = have;
      nst[i] = strides()[j];
    } else {
      IGNIS_CHECK(have == 1, ShapeError,
                  "[expand] cannot expand shape {} to {}: dimension {} has size {} (only size-1 "
                  "dimensions expand)",
                  shape_str(sizes()), shape_str(shape), j, have);
      ns[i] = want;
      nst[i] = 0;
    }
  }
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset()), "expand",
                       [](const Tensor& g) { return g; });
}

Tensor Tensor::squeeze() const {
  Shape ns, nst;
  for (int64_t i = 0; i < dim(); ++i)
    if (sizes()[i] != 1) ns.push_back(sizes()[i]), nst.push_back(strides()[i]);
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset()), "squeeze",
                       [in = sizes()](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::squeeze(int64_t d) const {
  auto identity = [](const Tensor& g) { return g; };
  if (dim() == 0) return recorded_view(*this, make_view(*this, {}, {}, storage_offset()), "squeeze", identity);
  d = wrap_dim(d, dim(), "squeeze");
  if (sizes()[d] != 1)
    return recorded_view(*this, make_view(*this, sizes(), strides(), storage_offset()), "squeeze", identity);
  Shape ns = sizes(), nst = strides();
  ns.erase(ns.begin() + d);
  nst.erase(nst.begin() + d);
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset()), "squeeze",
                       [in = sizes()](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape ns = sizes(), nst = strides();
  const int64_t st = d < dim() ? sizes()[d] * strides()[d] : 1;
  ns.insert(ns.begin() + d, 1);
  nst.insert(nst.begin() + d, st);
  return recorded_view(*this, make_view(*this, ns, nst, storage_offset()), "unsqueeze",
                       [in = sizes()](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  IGNIS_CHECK(start_dim <= end_dim, ValueError,
              "[flatten] start_dim {} must not come after end_dim {}", start_dim, end_dim);
  Shape ns(sizes().begin(), sizes().begin() + start_dim);
  int64_t m = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) m *= sizes()[i];
  ns.push_back(m);
  ns.insert(ns.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(ns);
}

Tensor Tensor::unflatten(int64_t d, const Shape& parts) const {
  d = wrap_dim(d, dim(), "unflatten");
  IGNIS_CHECK(!parts.empty(), ValueError, "[unflatten] sizes must not be empty");
  Shape resolved = infer_shape(parts, sizes()[d], "unflatten");
  Shape ns(sizes().begin(), sizes().begin() + d);
  ns.insert(ns.end(), resolved.begin(), resolved.end());
  ns.insert(ns.end(), sizes().begin() + d + 1, sizes().end());
  return view(ns);
}

Tensor Tensor::as_strided(const Shape& size, const Shape& stride,
                          std::optional<int64_t> offset) const {
  IGNIS_CHECK(size.size() == stride.size(), ShapeError,
              "[as_strided] size {} and stride {} differ in length", shape_str(size),
              shape_str(stride));
  detail::check_sizes(size, "as_strided");
  IGNIS_CHECK(!detail::needs_grad({this}), NotImplementedError,
              "[as_strided] does not support autograd yet; call it on a detach()ed tensor or "
              "inside NoGradGuard");
  const int64_t off = offset.value_or(storage_offset());
  IGNIS_CHECK(off >= 0, ValueError, "[as_strided] negative storage offset {}", off);
  // The furthest element must lie inside the storage.
  int64_t last = off;
  bool empty = false;
  for (size_t i = 0; i < size.size(); ++i) {
    IGNIS_CHECK(stride[i] >= 0, ValueError, "[as_strided] negative stride in {}",
                shape_str(stride));
    if (size[i] == 0) empty = true;
    last += (size[i] - 1) * stride[i];
  }
  const int64_t capacity = int64_t(impl()->storage->nbytes) / element_size();
  IGNIS_CHECK(empty || last < capacity, IndexError,
              "[as_strided] size {} stride {} offset {} reaches element {} but the storage "
              "holds {} elements",
              shape_str(size), shape_str(stride), off, last, capacity);
  return make_view(*this, size, stride, off);
}

Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
Tensor permute(const Tensor& x, const Shape& dims) { return x.permute(dims); }
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) { return x.transpose(d0, d1); }
Tensor flatten(const Tensor& x, int64_t s, int64_t e) { return x.flatten(s, e); }
Tensor squeeze(const Tensor& x, std::optional<int64_t> d) { return d ? x.squeeze(*d) : x.squeeze(); }
Tensor unsqueeze(const Tensor& x, int64_t d) { return x.unsqueeze(d); }

}  // namespace ignis
