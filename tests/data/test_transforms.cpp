// Each batch transform against a per-pixel computation written here from the documented rule
// (ignis/data/transforms.h): the draws are recomputed from transform_words, the pixels from
// plain index arithmetic. Then: independence from batch composition and worker count.
#include <gtest/gtest.h>

#include <algorithm>

#include "ignis/data/dataloader.h"
#include "ignis/data/transforms.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

constexpr int64_t B = 6, C = 2, H = 5, W = 7;

Tensor images() {
  std::vector<uint8_t> v(size_t(B * C * H * W));
  for (size_t i = 0; i < v.size(); ++i) v[i] = uint8_t((i * 37 + 11) % 256);
  return tensor(v, Shape{B, C, H, W});
}
const std::vector<int64_t> kIndices = {40, 3, 17, 999, 0, 5};

double at(const std::vector<uint8_t>& v, int64_t b, int64_t c, int64_t y, int64_t x) {
  return double(v[size_t(((b * C + c) * H + y) * W + x)]);
}

TEST(Transforms, ToFloatAndNormalize) {
  const Tensor x = images();
  const auto v = x.to_vector<uint8_t>();
  TransformContext ctx{1, 0, &kIndices, 0};
  const Tensor f = ToFloat()(x, ctx);
  EXPECT_EQ(f.dtype(), kFloat32);
  std::vector<double> expect;
  for (uint8_t p : v) expect.push_back(double(float(p) / 255.0f));
  EXPECT_TRUE(all_close(f, expect, 0, 0));
  const Tensor n = Normalize({0.5, 0.25}, {0.2, 0.4})(f, ctx);
  std::vector<double> ne;
  for (int64_t i = 0; i < f.numel(); ++i) {
    const int64_t c = (i / (H * W)) % C;
    const float m = c == 0 ? 0.5f : 0.25f, s = c == 0 ? 0.2f : 0.4f;
    ne.push_back(double((float(v[size_t(i)]) / 255.0f - m) / s));
  }
  EXPECT_TRUE(all_close(n, ne, 1e-6, 1e-6));
}

TEST(Transforms, FlipFollowsTheDraw) {
  const Tensor x = images();
  const auto v = x.to_vector<uint8_t>();
  TransformContext ctx{77, 3, &kIndices, 2};
  const auto out = RandomHorizontalFlip(0.5)(x, ctx).to_vector<uint8_t>();
  int flipped = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto w = transform_words(77, 3, kIndices[size_t(b)], 2);
    const bool flip = double(w[0] >> 8) / 16777216.0 < 0.5;
    flipped += flip;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xx = 0; xx < W; ++xx)
          ASSERT_EQ(
              double(out[size_t(((b * C + c) * H + y) * W + xx)]),
              at(v, b, c, y, flip ? W - 1 - xx : xx));
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, B);
}

double reflect(int64_t i, int64_t n) { return double(i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i)); }

TEST(Transforms, RandomCropZeroAndReflect) {
  const Tensor x = images();
  const auto v = x.to_vector<uint8_t>();
  const int64_t h = 4, w = 6, pad = 2;
  for (PadMode mode : {PadMode::Zeros, PadMode::Reflect}) {
    TransformContext ctx{5, 1, &kIndices, 0};
    const Tensor out_t = RandomCrop(h, w, pad, mode)(x.to(kFloat32), ctx);
    ASSERT_EQ(out_t.sizes(), (Shape{B, C, h, w}));
    const auto out = out_t.to_vector<float>();
    for (int64_t b = 0; b < B; ++b) {
      const auto wd = transform_words(5, 1, kIndices[size_t(b)], 0);
      const int64_t top = int64_t((uint64_t(wd[0]) * uint64_t(H + 2 * pad - h + 1)) >> 32);
      const int64_t left = int64_t((uint64_t(wd[1]) * uint64_t(W + 2 * pad - w + 1)) >> 32);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t xx = 0; xx < w; ++xx) {
            const int64_t sy = top + y - pad, sx = left + xx - pad;
            double e;
            if (mode == PadMode::Zeros)
              e = (sy < 0 || sy >= H || sx < 0 || sx >= W) ? 0 : at(v, b, c, sy, sx);
            else
              e = at(v, b, c, int64_t(reflect(sy, H)), int64_t(reflect(sx, W)));
            ASSERT_EQ(double(out[size_t(((b * C + c) * h + y) * w + xx)]), e)
                << "b " << b << " c " << c << " y " << y << " x " << xx;
          }
    }
  }
  TransformContext ctx{5, 1, &kIndices, 0};
  EXPECT_THROW_MSG(RandomCrop(10, 10, 1)(x, ctx), ShapeError, "does not fit");
}

TEST(Transforms, CutoutZeroesTheDrawnSquare) {
  const Tensor x = images();
  const auto v = x.to_vector<uint8_t>();
  TransformContext ctx{9, 0, &kIndices, 4};
  const auto out = Cutout(3)(x, ctx).to_vector<uint8_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto wd = transform_words(9, 0, kIndices[size_t(b)], 4);
    const int64_t cy = int64_t((uint64_t(wd[0]) * uint64_t(H)) >> 32);
    const int64_t cx = int64_t((uint64_t(wd[1]) * uint64_t(W)) >> 32);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xx = 0; xx < W; ++xx) {
          const bool cut = y >= cy - 1 && y < cy + 2 && xx >= cx - 1 && xx < cx + 2;
          ASSERT_EQ(
              double(out[size_t(((b * C + c) * H + y) * W + xx)]), cut ? 0.0 : at(v, b, c, y, xx));
        }
  }
}

TEST(Transforms, ColorJitterPerPixel) {
  constexpr int64_t n = 3, h = 4, w = 5;
  const std::vector<double> px = random_values(n * 3 * h * w, 0, 1, 3);
  const Tensor x = tensor(px, Shape{n, 3, h, w}).to(kFloat32);
  const std::vector<int64_t> idx = {7, 8, 100};
  TransformContext ctx{31, 2, &idx, 1};
  const Tensor out = ColorJitter(0.4, 0.4, 0.4)(x, ctx);
  std::vector<double> expect;
  for (int64_t b = 0; b < n; ++b) {
    const auto wd = transform_words(31, 2, idx[size_t(b)], 1);
    auto factor = [&](uint32_t word) { return 1 + 0.4 * (2 * double(word >> 8) / 16777216.0 - 1); };
    const double fb = factor(wd[0]), fc = factor(wd[1]), fs = factor(wd[2]);
    auto clamp01 = [](double v) { return std::min(1.0, std::max(0.0, v)); };
    std::vector<double> img(size_t(3 * h * w));
    for (size_t i = 0; i < img.size(); ++i)
      img[i] = clamp01(double(float(px[size_t(b * 3 * h * w) + i])) * fb);
    auto gray = [&](int64_t p) {
      return 0.299 * img[size_t(p)] + 0.587 * img[size_t(h * w + p)] +
             0.114 * img[size_t(2 * h * w + p)];
    };
    double m = 0;
    for (int64_t p = 0; p < h * w; ++p) m += gray(p) / double(h * w);
    for (auto& v : img) v = clamp01(fc * v + (1 - fc) * m);
    std::vector<double> g(size_t(h * w));
    for (int64_t p = 0; p < h * w; ++p) g[size_t(p)] = gray(p);
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < h * w; ++p) {
        double& v = img[size_t(c * h * w + p)];
        v = clamp01(fs * v + (1 - fs) * g[size_t(p)]);
      }
    expect.insert(expect.end(), img.begin(), img.end());
  }
  EXPECT_TRUE(all_close(out, expect, 1e-5, 1e-5));
}

TEST(Transforms, IndependentOfBatchCompositionAndWorkers) {
  // A per-sample result depends only on (seed, epoch, index): sample k alone equals row k of
  // the whole batch.
  const Tensor x = images();
  Compose pipe(
      21,
      {std::make_shared<ToFloat>(),
       std::make_shared<RandomCrop>(5, 7, 2),
       std::make_shared<RandomHorizontalFlip>(),
       std::make_shared<Cutout>(2)});
  const Tensor whole = pipe.apply(x, 2, kIndices);
  for (int64_t b = 0; b < B; ++b) {
    const Tensor one = pipe.apply(x.narrow(0, b, 1), 2, {kIndices[size_t(b)]});
    EXPECT_TRUE(equal(one, whole.narrow(0, b, 1))) << "sample " << b;
  }
  // Through the loader: same batches with 0 and 2 workers, different across epochs.
  auto ds = std::make_shared<SyntheticDataset>(50, Shape{3, 8, 8}, 10, 4);
  auto run = [&](int workers) {
    auto compose = std::make_shared<Compose>(
        8,
        std::vector<std::shared_ptr<BatchTransform>>{
            std::make_shared<ToFloat>(),
            std::make_shared<RandomCrop>(8, 8, 2, PadMode::Reflect),
            std::make_shared<RandomHorizontalFlip>()});
    DataLoader loader(
        ds,
        {.batch_size = 8,
         .shuffle = true,
         .seed = 1,
         .num_workers = workers,
         .transform = [compose](Batch& b) { (*compose)(b); }});
    std::vector<Tensor> out;
    for (int e = 0; e < 2; ++e)
      for (auto& [xb, yb] : loader) out.push_back(xb);
    return out;
  };
  const auto a = run(0), b = run(2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(equal(a[i], b[i])) << "batch " << i;
}

}  // namespace
}  // namespace ignis::testing
