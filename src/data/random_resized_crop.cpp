// RandomResizedCrop: the per-sample box (torchvision's sampling, rule in
// ignis/data/transforms.h) and the bilinear resize of each box, samples in parallel.
#include <cmath>

#include "core/error.h"
#include "core/parallel.h"
#include "data/image_kernels.h"
#include "ignis/data/transforms.h"
#include "ignis/ops.h"

namespace ignis::data {

RandomResizedCrop::RandomResizedCrop(
    int64_t size, std::array<double, 2> scale, std::array<double, 2> ratio)
    : size_(size), scale_(scale), ratio_(ratio) {
  IGNIS_CHECK(
      size_ > 0 && scale_[0] > 0 && scale_[0] <= scale_[1] && ratio_[0] > 0 &&
          ratio_[0] <= ratio_[1],
      ValueError,
      "[RandomResizedCrop] need size > 0, 0 < scale[0] <= scale[1] and 0 < ratio[0] <= "
      "ratio[1], got size {}, scale ({}, {}), ratio ({}, {})",
      size_,
      scale_[0],
      scale_[1],
      ratio_[0],
      ratio_[1]);
}

RandomResizedCrop::Box RandomResizedCrop::box(
    int64_t H, int64_t W, const TransformContext& ctx, int64_t sample) const {
  const double area = double(H) * double(W);
  const double lr0 = std::log(ratio_[0]), lr1 = std::log(ratio_[1]);
  for (uint32_t k = 0; k < 10; ++k) {
    TransformContext attempt = ctx;
    attempt.stream = ctx.stream + (k << 16);
    const auto wd = attempt.words(sample);
    const double target = area * (scale_[0] + (scale_[1] - scale_[0]) * word_uniform(wd[0]));
    const double aspect = std::exp(lr0 + (lr1 - lr0) * word_uniform(wd[1]));
    // std::nearbyint rounds half to even, as Python's round().
    const int64_t w = int64_t(std::nearbyint(std::sqrt(target * aspect)));
    const int64_t h = int64_t(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && w <= W && h > 0 && h <= H)
      return {word_below(wd[2], H - h + 1), word_below(wd[3], W - w + 1), h, w};
  }
  const double in_ratio = double(W) / double(H);
  int64_t h = H, w = W;
  if (in_ratio < ratio_[0])
    h = int64_t(std::nearbyint(double(W) / ratio_[0]));
  else if (in_ratio > ratio_[1])
    w = int64_t(std::nearbyint(double(H) * ratio_[1]));
  return {(H - h) / 2, (W - w) / 2, h, w};
}

namespace {
template <class T>
void crop_resize(
    const Tensor& in,
    Tensor& out,
    const std::vector<RandomResizedCrop::Box>& boxes) {
  const int64_t B = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const int64_t s = out.size(2);
  const T* src = static_cast<const T*>(in.data_ptr());
  T* dst = static_cast<T*>(out.data_ptr());
  ignis::detail::parallel_for(
      0, B, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C * s * s)), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const auto& bx = boxes[size_t(b)];
          const detail::LinearTaps ty = detail::linear_taps(bx.height, s);
          const detail::LinearTaps tx = detail::linear_taps(bx.width, s);
          for (int64_t c = 0; c < C; ++c)
            detail::resize_plane(
                src + (b * C + c) * H * W, W, bx.top, bx.left, ty, tx, dst + (b * C + c) * s * s);
        }
      });
}
}  // namespace

Tensor RandomResizedCrop::operator()(const Tensor& x, const TransformContext& ctx) const {
  IGNIS_CHECK(
      x.dim() == 4, ShapeError, "[RandomResizedCrop] expected a [B, C, H, W] batch, got {} dims", x.dim());
  IGNIS_CHECK(
      ctx.indices != nullptr && int64_t(ctx.indices->size()) == x.size(0),
      ValueError,
      "[RandomResizedCrop] expected one sample index per image ({})",
      x.size(0));
  IGNIS_CHECK(
      x.dtype() == kUInt8 || x.dtype() == kFloat32,
      DTypeError,
      "[RandomResizedCrop] expected uint8 or float32 images, got {}",
      dtype_name(x.dtype()));
  IGNIS_CHECK(
      x.device().is_cpu(), DeviceError, "[RandomResizedCrop] runs on CPU batches (before the device copy)");
  IGNIS_CHECK(
      x.size(2) > 0 && x.size(3) > 0, ShapeError, "[RandomResizedCrop] empty images");
  std::vector<Box> boxes(static_cast<size_t>(x.size(0)));
  for (int64_t b = 0; b < x.size(0); ++b) boxes[size_t(b)] = box(x.size(2), x.size(3), ctx, b);
  const Tensor in = x.contiguous();
  Tensor out = empty({x.size(0), x.size(1), size_, size_}, x.dtype());
  if (x.dtype() == kUInt8)
    crop_resize<uint8_t>(in, out, boxes);
  else
    crop_resize<float>(in, out, boxes);
  return out;
}

}  // namespace ignis::data
