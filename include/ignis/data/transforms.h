// Batch transforms: applied to a whole [B, C, H, W] batch on its device, composable, and
// random in a way that depends only on (seed, epoch, sample index) — never on which batch or
// worker a sample landed in.
//
// The random rule (what a test or another implementation recomputes):
//   words = Philox4x32-10(counter = {index lo32, index hi32, epoch lo32, stream},
//                         key = {seed lo32, seed hi32})           (transform_words below)
// where `index` is the sample's data set index (Batch::indices), and `stream` is the
// transform's position in its Compose (so two flips in one pipeline draw independently).
// From the words: uniform u(w) = (w >> 8) * 2^-24 in [0, 1); an integer in [0, n) is
// (w * n) >> 32 (word_below).
//   RandomHorizontalFlip(p): flip when u(w0) < p.
//   RandomCrop(h, w, padding): top = word_below(w0, H + 2 padding - h + 1),
//     left = word_below(w1, W + 2 padding - w + 1); out[y][x] = padded[top + y][left + x].
//   Cutout(size): cy = word_below(w0, H), cx = word_below(w1, W); zeroes rows
//     [cy - size/2, cy - size/2 + size) and the same columns, clipped to the image.
//   ColorJitter(b, c, s): factors fb = 1 + b (2 u(w0) - 1), fc = 1 + c (2 u(w1) - 1),
//     fs = 1 + s (2 u(w2) - 1), applied in that fixed order to float RGB in [0, 1], each step
//     clamped to [0, 1]: x *= fb; x = fc x + (1 - fc) mean(gray(x)); x = fs x + (1 - fs) gray(x),
//     gray = 0.299 R + 0.587 G + 0.114 B (torchvision's; it also randomises the order).
//   RandomResizedCrop(size, scale = (s0, s1), ratio = (r0, r1)): torchvision's procedure on an
//     H x W image. Attempt k = 0..9 draws its own words, transform_words(seed, epoch, index,
//     stream + (k << 16)): target = H W (s0 + (s1 - s0) u(w0)),
//     aspect = exp(log r0 + (log r1 - log r0) u(w1)), w = round(sqrt(target aspect)),
//     h = round(sqrt(target / aspect)) (round half to even, as Python); if 0 < w <= W and
//     0 < h <= H the box is top = word_below(w2, H - h + 1), left = word_below(w3, W - w + 1).
//     After 10 misses, the centre crop: W / H < r0 gives w = W, h = round(W / r0);
//     W / H > r1 gives h = H, w = round(H r1); else the whole image; top = (H - h) / 2,
//     left = (W - w) / 2. The box is resized to size x size by bilinear interpolation
//     (ignis/data/image.h, torchvision's resized_crop with antialias=False).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::data {

struct Batch;

/// The four Philox words of a sample's draw (rule above).
std::array<uint32_t, 4> transform_words(
    uint64_t seed, int64_t epoch, int64_t index, uint32_t stream);
inline double word_uniform(uint32_t w) { return double(w >> 8) * (1.0 / 16777216.0); }
inline int64_t word_below(uint32_t w, int64_t n) {
  return int64_t((uint64_t(w) * uint64_t(n)) >> 32);
}

/// What a transform needs to draw its randomness.
struct TransformContext {
  uint64_t seed = 0;
  int64_t epoch = 0;
  const std::vector<int64_t>* indices = nullptr;  ///< one data set index per sample
  uint32_t stream = 0;
  std::array<uint32_t, 4> words(int64_t sample) const {
    return transform_words(seed, epoch, (*indices)[size_t(sample)], stream);
  }
};

class BatchTransform {
 public:
  virtual ~BatchTransform() = default;
  /// The transformed batch (a new tensor; x is not modified).
  virtual Tensor operator()(const Tensor& x, const TransformContext& ctx) const = 0;
};

/// uint8 -> float32 x / 255 (other dtypes: converted to float32 and scaled the same way).
class ToFloat : public BatchTransform {
 public:
  Tensor operator()(const Tensor& x, const TransformContext& ctx) const override;
};

/// (x - mean[c]) / std[c] per channel (dim 1), in float32.
class Normalize : public BatchTransform {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& x, const TransformContext& ctx) const override;
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& std() const { return std_; }

 private:
  std::vector<double> mean_, std_;
};

enum class PadMode { Zeros, Reflect };

/// A random h x w window of the image padded by `padding` on each side (zeros, or reflected
/// without repeating the edge, as numpy's "reflect").
class RandomCrop : public BatchTransform {
 public:
  RandomCrop(int64_t height, int64_t width, int64_t padding = 0, PadMode mode = PadMode::Zeros);
  Tensor operator()(const Tensor& x, const TransformContext& ctx) const override;
  /// The window's origin {top, left} in source coordinates (negative inside the padding) for
  /// sample `sample` of an H x W batch.
  std::array<int64_t, 2> origin(int64_t H, int64_t W, const TransformContext& ctx, int64_t sample) const;
  int64_t height() const { return h_; }
  int64_t width() const { return w_; }
  int64_t padding() const { return pad_; }
  PadMode mode() const { return mode_; }

 private:
  int64_t h_, w_, pad_;
  PadMode mode_;
};

/// Mirrors each image left-right with probability p. With `alternate` (airbench's
/// alternating flip) the draw is made once, with the words of epoch 0, and epoch e mirrors
/// the image iff (u(w0 of epoch 0) < p) XOR (e is odd): every image is seen both ways in each
/// pair of epochs instead of by chance.
class RandomHorizontalFlip : public BatchTransform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5, bool alternate = false)
      : p_(p), alternate_(alternate) {}
  Tensor operator()(const Tensor& x, const TransformContext& ctx) const override;
  bool flips(const TransformContext& ctx, int64_t sample) const;

 private:
  double p_;
  bool alternate_;
};

/// Every image mirrored left-right (torch.flip(x, {-1}) on an image batch), for test-time
/// augmentation. x: [B, C, H, W] uint8 or float32, on any device.
Tensor hflip(const Tensor& x);
/// Every image moved down by dy and right by dx pixels, the uncovered border filled by
/// `mode` (Reflect: F.pad(x, 1, 'reflect') then a crop, for |dy|, |dx| < H, W).
Tensor translate(const Tensor& x, int64_t dy, int64_t dx, PadMode mode);

/// Zeroes a size x size square centred at a random pixel (DeVries & Taylor's Cutout).
class Cutout : public BatchTransform {
 public:
  explicit Cutout(int64_t size) : size_(size) {}
  Tensor operator()(const Tensor& x, const TransformContext& ctx) const override;

 private:
  int64_t size_;
};

/// Random brightness, contrast and saturation per sample (float32 RGB in [0, 1]).
class ColorJitter : public BatchTransform {
 public:
  ColorJitter(double brightness, double contrast, double saturation);
  Tensor operator()(const Tensor& x, const TransformContext& ctx) const override;

 private:
  double b_, c_, s_;
};

/// A random box of each image (rule above), resized to size x size.
class RandomResizedCrop : public BatchTransform {
 public:
  struct Box {
    int64_t top = 0, left = 0, height = 0, width = 0;
  };
  explicit RandomResizedCrop(
      int64_t size,
      std::array<double, 2> scale = {0.08, 1.0},
      std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0});
  Tensor operator()(const Tensor& x, const TransformContext& ctx) const override;
  /// The box sample `sample` of the batch gets in an H x W image.
  Box box(int64_t height, int64_t width, const TransformContext& ctx, int64_t sample) const;

 private:
  int64_t size_;
  std::array<double, 2> scale_, ratio_;
};

/// Transforms applied in order to field 0 of a batch (the images), each with its position as
/// its stream. Usable as DataLoaderOptions::transform.
///
/// Note [Fused CPU pipeline]: on a uint8 batch (on the CPU, or on a GPU with the same kernel
/// math), ToFloat, an optional Normalize and then at most one RandomCrop and one
/// RandomHorizontalFlip (either order) run as one pass that reads each source byte once and
/// writes each output float once, with the same arithmetic ((v / 255 - mean) / std in
/// float32, zero padding after normalisation) and the same draws, so the result is bit for
/// bit that of running them one by one. Anything else runs one by one.
class Compose {
 public:
  Compose(uint64_t seed, std::vector<std::shared_ptr<BatchTransform>> transforms)
      : seed_(seed), transforms_(std::move(transforms)) {}
  Tensor apply(const Tensor& x, int64_t epoch, const std::vector<int64_t>& indices) const;
  void operator()(Batch& batch) const;

 private:
  /// The fused run starting at transforms_[k] on x, or 0 transforms consumed.
  size_t fuse(const Tensor& x, size_t k, int64_t epoch, const std::vector<int64_t>& indices, Tensor& out) const;
  uint64_t seed_;
  std::vector<std::shared_ptr<BatchTransform>> transforms_;
};

}  // namespace ignis::data
