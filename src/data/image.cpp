// read_image (format by magic bytes, then the PNG or JPEG decoder) and the resize and
// centre-crop helpers; semantics in ignis/data/image.h.
#include "ignis/data/image.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <utility>

#include "core/error.h"
#include "core/parallel.h"
#include "data/file_bytes.h"
#include "data/image_codecs.h"
#include "data/image_kernels.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace {

constexpr uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr uint8_t kJpegMagic[3] = {0xFF, 0xD8, 0xFF};

std::string first_bytes_hex(const std::vector<uint8_t>& bytes) {
  std::string s;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i)
    fmt::format_to(std::back_inserter(s), "{}{:02X}", i ? " " : "", bytes[i]);
  return s;
}

void check_images(const Tensor& x, const char* op) {
  IGNIS_CHECK(
      x.dim() == 3 || x.dim() == 4,
      ShapeError,
      "[{}] expected [C, H, W] or [B, C, H, W] images, got {} dims",
      op,
      x.dim());
  IGNIS_CHECK(
      x.dtype() == kUInt8 || x.dtype() == kFloat32,
      DTypeError,
      "[{}] expected uint8 or float32 images, got {}",
      op,
      dtype_name(x.dtype()));
  IGNIS_CHECK(x.device().is_cpu(), DeviceError, "[{}] expected CPU images", op);
}

/// Each plane of `in` resampled into `out` through the taps (out.size(-2) rows, out.size(-1)
/// columns).
template <class T>
void resize_planes(
    const Tensor& in, Tensor& out, const detail::LinearTaps& ty, const detail::LinearTaps& tx) {
  const int64_t H = in.size(-2), W = in.size(-1), h = out.size(-2), w = out.size(-1);
  const int64_t planes = in.numel() / std::max<int64_t>(1, H * W);
  const T* src = static_cast<const T*>(in.data_ptr());
  T* dst = static_cast<T*>(out.data_ptr());
  ignis::detail::parallel_for(
      0, planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, h * w)), [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p)
          detail::resize_plane(src + p * H * W, W, 0, 0, ty, tx, dst + p * h * w);
      });
}

void resize_any(
    const Tensor& in, Tensor& out, const detail::LinearTaps& ty, const detail::LinearTaps& tx) {
  if (in.dtype() == kUInt8)
    resize_planes<uint8_t>(in, out, ty, tx);
  else
    resize_planes<float>(in, out, ty, tx);
}

/// resize_shorter's output size: the shorter side becomes `size`, the longer one
/// int(size * long / short), truncated as torchvision truncates it.
std::pair<int64_t, int64_t> shorter_side_to(int64_t h, int64_t w, int64_t size) {
  const int64_t shorter = std::min(h, w), longer = std::max(h, w);
  const int64_t new_long = int64_t(double(size) * double(longer) / double(shorter));
  return h <= w ? std::pair{size, new_long} : std::pair{new_long, size};
}

}  // namespace

Tensor decode_image(const std::vector<uint8_t>& bytes, const std::string& name) {
  IGNIS_CHECK(
      !bytes.empty(),
      IOError,
      "[read_image] {}: expected a PNG or JPEG file, found an empty file",
      name);
  if (bytes.size() >= sizeof kPngMagic && std::memcmp(bytes.data(), kPngMagic, sizeof kPngMagic) == 0)
    return detail::decode_png(bytes, name);
  if (bytes.size() >= sizeof kJpegMagic &&
      std::memcmp(bytes.data(), kJpegMagic, sizeof kJpegMagic) == 0)
    return detail::decode_jpeg(bytes, name);
  throw IOError(fmt::format(
      "[read_image] {}: expected a PNG (89 50 4E 47 0D 0A 1A 0A) or JPEG (FF D8 FF) file, "
      "found first bytes {}",
      name,
      first_bytes_hex(bytes)));
}

Tensor read_image(const std::string& path) {
  return decode_image(detail::read_raw_file_bytes(path, "read_image"), path);
}

Tensor resize(const Tensor& images, int64_t height, int64_t width) {
  check_images(images, "resize");
  IGNIS_CHECK(
      height > 0 && width > 0,
      ValueError,
      "[resize] output size must be positive, got {}x{}",
      height,
      width);
  IGNIS_CHECK(
      images.size(-2) > 0 && images.size(-1) > 0, ShapeError, "[resize] empty input image");
  const Tensor in = images.contiguous();
  Shape s = in.sizes();
  s[s.size() - 2] = height;
  s[s.size() - 1] = width;
  Tensor out = empty(s, in.dtype());
  resize_any(in, out, detail::linear_taps(in.size(-2), height), detail::linear_taps(in.size(-1), width));
  return out;
}

Tensor resize_shorter(const Tensor& images, int64_t size) {
  check_images(images, "resize_shorter");
  IGNIS_CHECK(size > 0, ValueError, "[resize_shorter] size must be positive, got {}", size);
  const int64_t h = images.size(-2), w = images.size(-1);
  IGNIS_CHECK(h > 0 && w > 0, ShapeError, "[resize_shorter] empty input image");
  const auto [nh, nw] = shorter_side_to(h, w, size);
  return resize(images, nh, nw);
}

Tensor resize_shorter_center_crop(const Tensor& images, int64_t size) {
  check_images(images, "resize_shorter_center_crop");
  IGNIS_CHECK(
      size > 0, ValueError, "[resize_shorter_center_crop] size must be positive, got {}", size);
  const int64_t h = images.size(-2), w = images.size(-1);
  IGNIS_CHECK(h > 0 && w > 0, ShapeError, "[resize_shorter_center_crop] empty input image");
  const auto [nh, nw] = shorter_side_to(h, w, size);
  // The resized image is never smaller than the crop (its shorter side is `size`), so the
  // crop is a window of it, at center_crop's offsets; only that window is computed.
  const int64_t top = int64_t(std::nearbyint(double(nh - size) / 2.0));
  const int64_t left = int64_t(std::nearbyint(double(nw - size) / 2.0));
  const Tensor in = images.contiguous();
  Shape s = in.sizes();
  s[s.size() - 2] = size;
  s[s.size() - 1] = size;
  Tensor out = empty(s, in.dtype());
  resize_any(in, out, detail::linear_taps(h, nh, top, size), detail::linear_taps(w, nw, left, size));
  return out;
}

Tensor center_crop(const Tensor& images, int64_t height, int64_t width) {
  check_images(images, "center_crop");
  IGNIS_CHECK(
      height > 0 && width > 0,
      ValueError,
      "[center_crop] crop size must be positive, got {}x{}",
      height,
      width);
  Shape s = images.sizes();
  s[s.size() - 2] = height;
  s[s.size() - 1] = width;
  Tensor out = zeros(s, images.dtype());
  Tensor src = images, dst = out;
  const int64_t crop[2] = {height, width};
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t d = images.dim() - 2 + k, in = images.size(d), c = crop[k];
    if (c > in) {
      dst = dst.narrow(d, (c - in) / 2, in);  // zero padding: half before, the rest after
    } else {
      // Python's round(): half to even, as std::nearbyint in the default rounding mode.
      src = src.narrow(d, int64_t(std::nearbyint(double(in - c) / 2.0)), c);
    }
  }
  dst.copy_(src);
  return out;
}

}  // namespace ignis::data
