// nn::functional::pad and interpolate, composed of differentiable ops (cat, narrow,
// index_select, expand, arithmetic) so gradients flow without kernels of their own.
#include <cmath>

#include "core/error.h"
#include "core/shape.h"
#include "ignis/nn/functional.h"

namespace ignis::nn::functional {

namespace {
Tensor index_range(const std::vector<int64_t>& idx, Device device) {
  return tensor(idx).to(device);
}

/// Pads (or crops, for negative amounts) dimension d by `before` and `after`.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t before, int64_t after, const std::string& mode,
               double value) {
  Tensor t = x;
  if (before < 0) t = t.narrow(d, -before, t.size(d) + before), before = 0;
  if (after < 0) t = t.narrow(d, 0, t.size(d) + after), after = 0;
  if (before == 0 && after == 0) return t;
  const int64_t n = t.size(d);
  std::vector<Tensor> parts;
  auto constant_block = [&](int64_t len) {
    Shape s = t.sizes();
    s[size_t(d)] = len;
    return full(s, value, TensorOptions(t.dtype(), t.device()));
  };
  if (mode == "constant") {
    parts = {constant_block(before), t, constant_block(after)};
  } else if (mode == "reflect") {
    IGNIS_CHECK(before < n && after < n, ValueError,
                "[pad] reflect padding of {} and {} must be smaller than the dimension size {}",
                before, after, n);
    std::vector<int64_t> left, right;
    for (int64_t i = before; i >= 1; --i) left.push_back(i);
    for (int64_t i = 1; i <= after; ++i) right.push_back(n - 1 - i);
    parts = {index_select(t, d, index_range(left, t.device())), t,
             index_select(t, d, index_range(right, t.device()))};
  } else if (mode == "replicate") {
    IGNIS_CHECK(n > 0, ValueError, "[pad] cannot replicate-pad an empty dimension");
    Shape sb = t.sizes(), sa = t.sizes();
    sb[size_t(d)] = before;
    sa[size_t(d)] = after;
    parts = {t.narrow(d, 0, 1).expand(sb), t, t.narrow(d, n - 1, 1).expand(sa)};
  } else {
    throw ValueError("[pad] mode must be 'constant', 'reflect' or 'replicate', got '" + mode + "'");
  }
  std::vector<Tensor> nonempty;
  for (Tensor& p : parts)
    if (p.size(d) > 0) nonempty.push_back(p);
  return cat(nonempty, d);
}
}  // namespace

Tensor pad(const Tensor& x, const Shape& pads, const std::string& mode, double value) {
  IGNIS_CHECK(pads.size() % 2 == 0 && int64_t(pads.size()) / 2 <= x.dim(), ValueError,
              "[pad] expected an even number of pads covering at most {} dims, got {}", x.dim(),
              detail::shape_str(pads));
  Tensor out = x;
  for (size_t i = 0; i < pads.size() / 2; ++i)
    out = pad_dim(out, x.dim() - 1 - int64_t(i), pads[2 * i], pads[2 * i + 1], mode, value);
  return out;
}

namespace {
/// Resizes dim d (of size in) to out: nearest index, or the two bilinear taps and weights.
Tensor resize_dim(const Tensor& x, int64_t d, int64_t out, double scale, const InterpolateOptions& o) {
  const int64_t in = x.size(d);
  if (o.mode == "nearest") {
    std::vector<int64_t> idx(static_cast<size_t>(out));
    for (int64_t i = 0; i < out; ++i)
      idx[size_t(i)] = std::min<int64_t>(int64_t(std::floor(double(i) * scale)), in - 1);
    return index_select(x, d, index_range(idx, x.device()));
  }
  std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
  std::vector<double> w1(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    double src = o.align_corners ? (out > 1 ? double(i) * double(in - 1) / double(out - 1) : 0.0)
                                 : std::max((double(i) + 0.5) * scale - 0.5, 0.0);
    const int64_t lo = std::min<int64_t>(int64_t(std::floor(src)), in - 1);
    i0[size_t(i)] = lo;
    i1[size_t(i)] = std::min<int64_t>(lo + 1, in - 1);
    w1[size_t(i)] = src - double(lo);
  }
  Shape wshape(size_t(x.dim()), 1);
  wshape[size_t(d)] = out;
  Tensor w = tensor(w1, wshape).to(x.device(), x.dtype());
  Tensor a = index_select(x, d, index_range(i0, x.device()));
  Tensor b = index_select(x, d, index_range(i1, x.device()));
  return add(mul(a, 1.0 - w), mul(b, w));
}
}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& o) {
  IGNIS_CHECK(x.dim() == 4, ShapeError, "[interpolate] expected a 4-D [N, C, H, W] input, got {}",
              detail::shape_str(x.sizes()));
  IGNIS_CHECK(o.size.has_value() != o.scale_factor.has_value(), ValueError,
              "[interpolate] give exactly one of size and scale_factor");
  IGNIS_CHECK(o.mode == "nearest" || o.mode == "bilinear", ValueError,
              "[interpolate] mode must be 'nearest' or 'bilinear', got '{}'", o.mode);
  Tensor out = x;
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t d = 2 + k, in = x.size(d);
    const int64_t n = o.size ? (*o.size)[size_t(k)] : int64_t(std::floor(double(in) * *o.scale_factor));
    IGNIS_CHECK(n > 0, ValueError, "[interpolate] output size must be positive, got {}", n);
    // PyTorch uses 1/scale_factor as the source step when a scale is given, in/out otherwise.
    const double scale = o.scale_factor ? 1.0 / *o.scale_factor : double(in) / double(n);
    out = resize_dim(out, d, n, scale, o);
  }
  return out;
}

}  // namespace ignis::nn::functional
