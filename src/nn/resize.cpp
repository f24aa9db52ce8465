// nn::functional::pad and interpolate. Over the last two dims of floating tensors of up to 4
// dims, on a device with the resampling kernels (src/ops/nn_kernels.h: the CPU), one kernel
// reads each output pixel from its source taps, forward and backward (16-bit floats in
// float32). Otherwise they
// are composed of differentiable ops (cat, narrow, index_select, expand, arithmetic), whose
// gradients can also be differentiated again (create_graph); the kernels' cannot.
#include <cmath>
#include <memory>

#include "autograd/record.h"
#include "core/error.h"
#include "core/shape.h"
#include "ignis/nn/functional.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::nn::functional {

namespace {
using detail::ResampleAxis;
using detail::ResampleParams;

Tensor index_range(const std::vector<int64_t>& idx, Device device) {
  return tensor(idx).to(device);
}

/// The source of each of the n + before + after positions of a padded dimension of size n
/// (both pads non-negative): -1 for constant padding. The one place pad's mode and the
/// sizes it needs are checked, for the kernels and the composition alike.
ResampleAxis pad_axis(int64_t n, int64_t before, int64_t after, const std::string& mode) {
  ResampleAxis a;
  if (before > 0 || after > 0) {
    if (mode == "reflect")
      IGNIS_CHECK(
          before < n && after < n,
          ValueError,
          "[pad] reflect padding of {} and {} must be smaller than the dimension size {}",
          before,
          after,
          n);
    else if (mode == "replicate")
      IGNIS_CHECK(n > 0, ValueError, "[pad] cannot replicate-pad an empty dimension");
    else if (mode != "constant")
      throw ValueError(
          "[pad] mode must be 'constant', 'reflect' or 'replicate', got '" + mode + "'");
  }
  for (int64_t o = 0; o < n + before + after; ++o) {
    int64_t i = o - before;
    if (i < 0 || i >= n) {
      if (mode == "reflect")
        i = i < 0 ? -i : 2 * (n - 1) - i;
      else if (mode == "replicate")
        i = std::clamp<int64_t>(i, 0, n - 1);
      else
        i = -1;
    }
    a.i0.push_back(i);
  }
  return a;
}

/// t with the negative amounts of a pad of its dim d applied as crops (narrow views); those
/// amounts become 0.
Tensor crop_negative(const Tensor& t, int64_t d, int64_t& before, int64_t& after) {
  Tensor r = t;
  if (before < 0) r = r.narrow(d, -before, r.size(d) + before), before = 0;
  if (after < 0) r = r.narrow(d, 0, r.size(d) + after), after = 0;
  return r;
}

/// Pads (or crops, for negative amounts) dimension d by `before` and `after`, composed of
/// differentiable ops: pad_axis's sources gathered with index_select, or constant blocks
/// joined with cat.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t before, int64_t after, const std::string& mode,
               double value) {
  const Tensor t = crop_negative(x, d, before, after);
  if (before == 0 && after == 0) return t;
  const ResampleAxis sources = pad_axis(t.size(d), before, after, mode);  // checks mode, sizes
  if (mode != "constant") return index_select(t, d, index_range(sources.i0, t.device()));
  auto constant_block = [&](int64_t len) {
    Shape s = t.sizes();
    s[size_t(d)] = len;
    return full(s, value, TensorOptions(t.dtype(), t.device()));
  };
  std::vector<Tensor> nonempty;
  for (Tensor p : {constant_block(before), t, constant_block(after)})
    if (p.size(d) > 0) nonempty.push_back(p);
  return cat(nonempty, d);
}

/// Whether pad and interpolate of x can take the resampling kernels (16-bit floats through
/// float32: see is_16_bit).
bool resample_kernel_fits(const Tensor& x) {
  return is_floating(x.dtype()) && detail::resample2d_forward_kernel.has(x.device().type) &&
         detail::resample2d_backward_kernel.has(x.device().type);
}

/// bfloat16 and float16 inputs are resampled in float32 and rounded once at the end, as
/// PyTorch computes them in float (the kernels see float32 or float64 only).
bool is_16_bit(const Tensor& x) { return x.dtype() == kBFloat16 || x.dtype() == kFloat16; }

/// x [N, C, H, W] resampled by p, channels-last or contiguous, with its gradient recorded.
Tensor resample2d(
    const char* op, const Tensor& x, std::shared_ptr<const ResampleParams> p, bool cl) {
  const Shape shape{x.size(0), x.size(1), int64_t(p->h.i0.size()), int64_t(p->w.i0.size())};
  Tensor out = detail::empty_in_layout(shape, x.dtype(), x.device(), cl);
  if (out.numel() > 0) detail::resample2d_forward_kernel.get(x.device())(x, out, *p);
  if (detail::needs_grad({&x}))
    detail::record(op, {out}, {x}, {}, [p, in_shape = x.sizes(), cl](const auto& g, const auto&) {
      Tensor gi = detail::empty_in_layout(in_shape, g[0].dtype(), g[0].device(), cl);
      if (gi.numel() > 0) detail::resample2d_backward_kernel.get(g[0].device())(g[0], gi, *p);
      return std::vector<Tensor>{gi};
    });
  return out;
}

/// pad through the kernels: the last one or two dims of a tensor of at most 4 dims.
Tensor pad_with_kernel(const Tensor& x, const Shape& pads, const std::string& mode, double value) {
  Tensor t = x;
  int64_t amount[2][2] = {{0, 0}, {0, 0}};  // [W, H][before, after], crops applied
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const int64_t d = x.dim() - 1 - int64_t(k);
    int64_t before = pads[2 * k], after = pads[2 * k + 1];
    t = crop_negative(t, d, before, after);
    amount[k][0] = before, amount[k][1] = after;
  }
  Tensor t4 = t;
  while (t4.dim() < 4) t4 = t4.unsqueeze(0);
  auto p = std::make_shared<ResampleParams>();
  p->w = pad_axis(t4.size(3), amount[0][0], amount[0][1], mode);
  p->h = pad_axis(t4.size(2), amount[1][0], amount[1][1], mode);
  p->fill = value;
  // The result takes x's layout (a cropped channels-last view is no longer dense).
  Tensor out = resample2d("pad", t4, p, x.dim() == 4 && detail::is_channels_last(x));
  while (out.dim() > x.dim()) out = out.squeeze(0);
  return out;
}
}  // namespace

Tensor pad(const Tensor& x, const Shape& pads, const std::string& mode, double value) {
  IGNIS_CHECK(pads.size() % 2 == 0 && int64_t(pads.size()) / 2 <= x.dim(), ValueError,
              "[pad] expected an even number of pads covering at most {} dims, got {}", x.dim(),
              detail::shape_str(pads));
  if (pads.size() <= 4 && x.dim() <= 4 && resample_kernel_fits(x))
    return is_16_bit(x) ? pad_with_kernel(x.to(kFloat32), pads, mode, value).to(x.dtype())
                        : pad_with_kernel(x, pads, mode, value);
  Tensor out = x;
  for (size_t i = 0; i < pads.size() / 2; ++i)
    out = pad_dim(out, x.dim() - 1 - int64_t(i), pads[2 * i], pads[2 * i + 1], mode, value);
  return out;
}

namespace {
/// The taps of an axis of size `in` resized to `out`: nearest index, or the two bilinear taps
/// and the second one's weight (PyTorch's source-index rules: an axis that keeps its size is
/// copied; nearest doubles an axis by halving the index, and otherwise steps in float, as
/// PyTorch's nearest_idx does, so that floor() lands on the same pixel).
ResampleAxis resize_axis(int64_t in, int64_t out, double scale, const InterpolateOptions& o) {
  ResampleAxis a;
  const float nearest_step = o.scale_factor ? float(1.0 / *o.scale_factor) : float(in) / float(out);
  for (int64_t i = 0; i < out; ++i) {
    if (o.mode == "nearest") {
      a.i0.push_back(
          out == in ? i
          : out == 2 * in
              ? i / 2
              : std::min<int64_t>(int64_t(std::floor(float(i) * nearest_step)), in - 1));
      continue;
    }
    if (out == in) {
      a.i0.push_back(i), a.i1.push_back(i), a.w1.push_back(0.0);
      continue;
    }
    double src = o.align_corners ? (out > 1 ? double(i) * double(in - 1) / double(out - 1) : 0.0)
                                 : std::max((double(i) + 0.5) * scale - 0.5, 0.0);
    const int64_t lo = std::min<int64_t>(int64_t(std::floor(src)), in - 1);
    a.i0.push_back(lo);
    a.i1.push_back(std::min<int64_t>(lo + 1, in - 1));
    a.w1.push_back(src - double(lo));
  }
  return a;
}

/// Resizes dim d of x by the taps of `a`, composed of differentiable ops.
Tensor resize_dim(const Tensor& x, int64_t d, const ResampleAxis& a, bool bilinear) {
  if (!bilinear) return index_select(x, d, index_range(a.i0, x.device()));
  Shape wshape(size_t(x.dim()), 1);
  wshape[size_t(d)] = int64_t(a.i0.size());
  Tensor w = tensor(a.w1, wshape).to(x.device(), x.dtype());
  Tensor lo = index_select(x, d, index_range(a.i0, x.device()));
  Tensor hi = index_select(x, d, index_range(a.i1, x.device()));
  return add(mul(lo, 1.0 - w), mul(hi, w));
}
}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& o) {
  IGNIS_CHECK(x.dim() == 4, ShapeError, "[interpolate] expected a 4-D [N, C, H, W] input, got {}",
              detail::shape_str(x.sizes()));
  IGNIS_CHECK(o.size.has_value() != o.scale_factor.has_value(), ValueError,
              "[interpolate] give exactly one of size and scale_factor");
  IGNIS_CHECK(o.mode == "nearest" || o.mode == "bilinear", ValueError,
              "[interpolate] mode must be 'nearest' or 'bilinear', got '{}'", o.mode);
  auto p = std::make_shared<ResampleParams>();
  p->bilinear = o.mode == "bilinear";
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t in = x.size(2 + k);
    const int64_t n = o.size ? (*o.size)[size_t(k)] : int64_t(std::floor(double(in) * *o.scale_factor));
    IGNIS_CHECK(n > 0, ValueError, "[interpolate] output size must be positive, got {}", n);
    // PyTorch uses 1/scale_factor as the source step when a scale is given, in/out otherwise.
    const double scale = o.scale_factor ? 1.0 / *o.scale_factor : double(in) / double(n);
    (k == 0 ? p->h : p->w) = resize_axis(in, n, scale, o);
  }
  if (resample_kernel_fits(x) && x.size(2) > 0 && x.size(3) > 0) {
    const bool cl = detail::is_channels_last(x);
    if (is_16_bit(x)) return resample2d("interpolate", x.to(kFloat32), p, cl).to(x.dtype());
    return resample2d("interpolate", x, p, cl);
  }
  return resize_dim(resize_dim(x, 2, p->h, p->bilinear), 3, p->w, p->bilinear);
}

}  // namespace ignis::nn::functional
