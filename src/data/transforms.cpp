// Front ends of the batch transforms: argument checks and the per-sample draws (the rule in
// ignis/data/transforms.h); the pixels move in the sample_geometry kernel or in tensor ops.
#include "ignis/data/transforms.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "data/transform_kernels.h"
#include "ignis/data/dataloader.h"
#include "ignis/ops.h"
#include "kernels/philox.h"

namespace ignis::data {

using detail::GeometryParams;
using detail::SampleWindow;

std::array<uint32_t, 4> transform_words(
    uint64_t seed, int64_t epoch, int64_t index, uint32_t stream) {
  namespace ph = kernels::philox;
  const uint64_t i = uint64_t(index);
  const ph::Words w = ph::philox4x32_10(
      ph::Words{{uint32_t(i), uint32_t(i >> 32), uint32_t(uint64_t(epoch)), stream}},
      uint32_t(seed),
      uint32_t(seed >> 32));
  return {w.w[0], w.w[1], w.w[2], w.w[3]};
}

namespace {

void check_image_batch(const Tensor& x, const char* op) {
  IGNIS_CHECK(
      x.dim() == 4, ShapeError, "[{}] expected a [B, C, H, W] batch, got {} dims", op, x.dim());
  IGNIS_CHECK(
      x.dtype() == kUInt8 || x.dtype() == kFloat32,
      DTypeError,
      "[{}] expected uint8 or float32 images, got {}",
      op,
      dtype_name(x.dtype()));
}

void check_images(const Tensor& x, const TransformContext& ctx, const char* op) {
  check_image_batch(x, op);
  IGNIS_CHECK(
      ctx.indices != nullptr && int64_t(ctx.indices->size()) == x.size(0),
      ValueError,
      "[{}] expected one sample index per image ({}), got {}",
      op,
      x.size(0),
      ctx.indices ? ctx.indices->size() : 0);
}

Tensor run_geometry(const Tensor& x, int64_t h, int64_t w, const GeometryParams& p) {
  const Tensor in = x.contiguous();
  Tensor out = empty({x.size(0), x.size(1), h, w}, {x.dtype(), x.device()});
  if (out.numel() > 0) detail::sample_geometry_kernel.get(x.device())(in, out, p);
  return out;
}

}  // namespace

Tensor ToFloat::operator()(const Tensor& x, const TransformContext&) const {
  Tensor out = x.to(kFloat32, /*copy=*/true);
  out.div_(255.0);
  return out;
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  IGNIS_CHECK(
      mean_.size() == std_.size() && !mean_.empty(),
      ValueError,
      "[Normalize] {} means but {} stds",
      mean_.size(),
      std_.size());
  for (double s : std_) IGNIS_CHECK(s != 0, ValueError, "[Normalize] std of 0");
}

Tensor Normalize::operator()(const Tensor& x, const TransformContext&) const {
  IGNIS_CHECK(
      x.dim() >= 2 && x.size(1) == int64_t(mean_.size()),
      ShapeError,
      "[Normalize] expected {} channels in dim 1, got shape with {} dims",
      mean_.size(),
      x.dim());
  Shape s(size_t(x.dim()), 1);
  s[1] = int64_t(mean_.size());
  const Tensor m = tensor(mean_, s, {kFloat32, x.device()});
  const Tensor sd = tensor(std_, s, {kFloat32, x.device()});
  Tensor out = x.dtype() == kFloat32 ? x.sub(m) : x.to(kFloat32).sub_(m);
  out.div_(sd);
  return out;
}

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding, PadMode mode)
    : h_(height), w_(width), pad_(padding), mode_(mode) {
  IGNIS_CHECK(
      h_ > 0 && w_ > 0 && pad_ >= 0,
      ValueError,
      "[RandomCrop] need positive size and padding >= 0, got {}x{} padding {}",
      h_,
      w_,
      pad_);
}

Tensor RandomCrop::operator()(const Tensor& x, const TransformContext& ctx) const {
  check_images(x, ctx, "RandomCrop");
  const int64_t H = x.size(2), W = x.size(3);
  IGNIS_CHECK(
      H + 2 * pad_ >= h_ && W + 2 * pad_ >= w_,
      ShapeError,
      "[RandomCrop] a {}x{} crop does not fit a {}x{} image padded by {}",
      h_,
      w_,
      H,
      W,
      pad_);
  IGNIS_CHECK(
      mode_ != PadMode::Reflect || (pad_ < H && pad_ < W),
      ValueError,
      "[RandomCrop] reflect padding {} needs images larger than it, got {}x{}",
      pad_,
      H,
      W);
  GeometryParams p;
  p.reflect = mode_ == PadMode::Reflect;
  p.windows.resize(size_t(x.size(0)));
  for (int64_t b = 0; b < x.size(0); ++b) {
    const auto o = origin(H, W, ctx, b);
    p.windows[size_t(b)].top = o[0];
    p.windows[size_t(b)].left = o[1];
  }
  return run_geometry(x, h_, w_, p);
}

std::array<int64_t, 2> RandomCrop::origin(
    int64_t H, int64_t W, const TransformContext& ctx, int64_t sample) const {
  const auto w = ctx.words(sample);
  return {word_below(w[0], H + 2 * pad_ - h_ + 1) - pad_, word_below(w[1], W + 2 * pad_ - w_ + 1) - pad_};
}

bool RandomHorizontalFlip::flips(const TransformContext& ctx, int64_t sample) const {
  if (!alternate_) return word_uniform(ctx.words(sample)[0]) < p_;
  const auto first_epoch =
      transform_words(ctx.seed, 0, (*ctx.indices)[size_t(sample)], ctx.stream);
  return (word_uniform(first_epoch[0]) < p_) != (ctx.epoch % 2 != 0);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& x, const TransformContext& ctx) const {
  check_images(x, ctx, "RandomHorizontalFlip");
  GeometryParams p;
  p.windows.resize(size_t(x.size(0)));
  for (int64_t b = 0; b < x.size(0); ++b) p.windows[size_t(b)].flip = flips(ctx, b);
  return run_geometry(x, x.size(2), x.size(3), p);
}

Tensor hflip(const Tensor& x) {
  check_image_batch(x, "hflip");
  GeometryParams p;
  p.windows.assign(size_t(x.size(0)), SampleWindow{.flip = true});
  return run_geometry(x, x.size(2), x.size(3), p);
}

Tensor translate(const Tensor& x, int64_t dy, int64_t dx, PadMode mode) {
  check_image_batch(x, "translate");
  const int64_t H = x.size(2), W = x.size(3);
  IGNIS_CHECK(
      mode != PadMode::Reflect || (std::abs(dy) < H && std::abs(dx) < W),
      ValueError,
      "[translate] a reflected shift of ({}, {}) needs images larger than it, got {}x{}",
      dy,
      dx,
      H,
      W);
  GeometryParams p;
  p.reflect = mode == PadMode::Reflect;
  // The output pixel (y, x) reads the source at (y - dy, x - dx): the window starts at -dy.
  p.windows.assign(size_t(x.size(0)), SampleWindow{.top = -dy, .left = -dx});
  return run_geometry(x, H, W, p);
}

Tensor Cutout::operator()(const Tensor& x, const TransformContext& ctx) const {
  check_images(x, ctx, "Cutout");
  const int64_t H = x.size(2), W = x.size(3);
  GeometryParams p;
  p.windows.resize(size_t(x.size(0)));
  for (int64_t b = 0; b < x.size(0); ++b) {
    const auto w = ctx.words(b);
    const int64_t y0 = word_below(w[0], H) - size_ / 2, x0 = word_below(w[1], W) - size_ / 2;
    SampleWindow& win = p.windows[size_t(b)];
    win.cut_y0 = std::clamp<int64_t>(y0, 0, H);
    win.cut_y1 = std::clamp<int64_t>(y0 + size_, 0, H);
    win.cut_x0 = std::clamp<int64_t>(x0, 0, W);
    win.cut_x1 = std::clamp<int64_t>(x0 + size_, 0, W);
  }
  return run_geometry(x, H, W, p);
}

ColorJitter::ColorJitter(double brightness, double contrast, double saturation)
    : b_(brightness), c_(contrast), s_(saturation) {
  IGNIS_CHECK(
      b_ >= 0 && b_ <= 1 && c_ >= 0 && c_ <= 1 && s_ >= 0 && s_ <= 1,
      ValueError,
      "[ColorJitter] strengths must lie in [0, 1], got {}, {}, {}",
      b_,
      c_,
      s_);
}

namespace {
/// 0.299 R + 0.587 G + 0.114 B as [B, 1, H, W].
Tensor grayscale(const Tensor& x) {
  return (x.select(1, 0) * 0.299 + x.select(1, 1) * 0.587 + x.select(1, 2) * 0.114).unsqueeze(1);
}
}  // namespace

Tensor ColorJitter::operator()(const Tensor& x, const TransformContext& ctx) const {
  check_images(x, ctx, "ColorJitter");
  IGNIS_CHECK(
      x.dtype() == kFloat32 && x.size(1) == 3,
      DTypeError,
      "[ColorJitter] expected float32 RGB images (ToFloat first), got {} with {} channels",
      dtype_name(x.dtype()),
      x.size(1));
  const int64_t B = x.size(0);
  const size_t nb = static_cast<size_t>(B);
  std::vector<float> fb(nb), fc(nb), fs(nb);
  for (int64_t b = 0; b < B; ++b) {
    const auto w = ctx.words(b);
    fb[size_t(b)] = float(1 + b_ * (2 * word_uniform(w[0]) - 1));
    fc[size_t(b)] = float(1 + c_ * (2 * word_uniform(w[1]) - 1));
    fs[size_t(b)] = float(1 + s_ * (2 * word_uniform(w[2]) - 1));
  }
  const TensorOptions opt{kFloat32, x.device()};
  const Tensor tb = tensor(fb, Shape{B, 1, 1, 1}, opt), tc = tensor(fc, Shape{B, 1, 1, 1}, opt),
               ts = tensor(fs, Shape{B, 1, 1, 1}, opt);
  Tensor out = (x * tb).clamp_(0.0, 1.0);
  const Tensor m = mean(grayscale(out), {1, 2, 3}, /*keepdim=*/true);
  out = (tc * out + (1 - tc) * m).clamp_(0.0, 1.0);
  out = (ts * out + (1 - ts) * grayscale(out)).clamp_(0.0, 1.0);
  return out;
}

size_t Compose::fuse(
    const Tensor& x, size_t k, int64_t epoch, const std::vector<int64_t>& indices, Tensor& out) const {
  const size_t n = transforms_.size();
  if (k >= n || !dynamic_cast<const ToFloat*>(transforms_[k].get()) || x.dtype() != kUInt8 ||
      !detail::sample_geometry_kernel.has(x.device().type) || x.dim() != 4 ||
      int64_t(indices.size()) != x.size(0))
    return 0;
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  GeometryParams p;
  p.to_float = true;
  size_t j = k + 1;
  if (j < n)
    if (const auto* norm = dynamic_cast<const Normalize*>(transforms_[j].get())) {
      if (int64_t(norm->mean().size()) != C) return 0;  // one by one, for Normalize's error
      for (int64_t c = 0; c < C; ++c) {
        p.mean.push_back(float(norm->mean()[size_t(c)]));
        p.std.push_back(float(norm->std()[size_t(c)]));
      }
      ++j;
    }
  // Then at most one crop and one flip, in either order (the flip mirrors the window).
  const RandomCrop* crop = nullptr;
  const RandomHorizontalFlip* flip = nullptr;
  size_t crop_at = 0, flip_at = 0;
  for (; j < n; ++j) {
    if (const auto* c = dynamic_cast<const RandomCrop*>(transforms_[j].get()); c && !crop) {
      crop = c, crop_at = j;
    } else if (const auto* f = dynamic_cast<const RandomHorizontalFlip*>(transforms_[j].get()); f && !flip) {
      flip = f, flip_at = j;
    } else {
      break;
    }
  }
  if (!crop && !flip) return 0;
  int64_t h = H, w = W;
  if (crop) {
    const int64_t pad = crop->padding();
    h = crop->height(), w = crop->width();
    // A crop that does not fit, or reflect padding too wide, runs alone for its error.
    if (H + 2 * pad < h || W + 2 * pad < w || (crop->mode() == PadMode::Reflect && (pad >= H || pad >= W)))
      return 0;
    p.reflect = crop->mode() == PadMode::Reflect;
  }
  p.windows.resize(size_t(B));
  const TransformContext crop_ctx{seed_, epoch, &indices, uint32_t(crop_at)};
  const TransformContext flip_ctx{seed_, epoch, &indices, uint32_t(flip_at)};
  for (int64_t b = 0; b < B; ++b) {
    SampleWindow& win = p.windows[size_t(b)];
    if (crop) {
      const auto o = crop->origin(H, W, crop_ctx, b);
      win.top = o[0], win.left = o[1];
    }
    if (flip && flip->flips(flip_ctx, b)) {
      win.flip = true;
      // Flipping first mirrors the image under the window: the window moves to W - w - left.
      if (crop && flip_at < crop_at) win.left = W - w - win.left;
    }
  }
  out = empty({B, C, h, w}, {kFloat32, x.device()});
  if (out.numel() > 0) detail::sample_geometry_kernel.get(x.device())(x.contiguous(), out, p);
  return j - k;
}

Tensor Compose::apply(const Tensor& x, int64_t epoch, const std::vector<int64_t>& indices) const {
  Tensor out = x;
  for (size_t k = 0; k < transforms_.size();) {
    Tensor fused;
    if (const size_t used = fuse(out, k, epoch, indices, fused)) {
      out = fused;
      k += used;
      continue;
    }
    const TransformContext ctx{seed_, epoch, &indices, uint32_t(k)};
    out = (*transforms_[k])(out, ctx);
    ++k;
  }
  return out;
}

void Compose::operator()(Batch& batch) const {
  batch.fields.at(0) = apply(batch.fields.at(0), batch.epoch, batch.indices);
}

}  // namespace ignis::data
