// RandomResizedCrop: the box recomputed here from the documented rule (torchvision's 10
// attempts, then the centre crop) and the same Philox words, the fallback boxes worked out
// by hand, and every output pixel against a float64 bilinear resize of the sampled box.
#include <gtest/gtest.h>

#include <cmath>

#include "data/image_test_util.h"
#include "ignis/data/transforms.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;
using Box = RandomResizedCrop::Box;

/// The rule of ignis/data/transforms.h, written out again.
Box expected_box(
    int64_t H, int64_t W, uint64_t seed, int64_t epoch, int64_t index, uint32_t stream,
    double s0, double s1, double r0, double r1, int* attempts) {
  for (uint32_t k = 0; k < 10; ++k) {
    const auto w = transform_words(seed, epoch, index, stream + (k << 16));
    const double target = double(H * W) * (s0 + (s1 - s0) * double(w[0] >> 8) / 16777216.0);
    const double aspect = std::exp(std::log(r0) + (std::log(r1) - std::log(r0)) * double(w[1] >> 8) / 16777216.0);
    const int64_t bw = int64_t(std::nearbyint(std::sqrt(target * aspect)));
    const int64_t bh = int64_t(std::nearbyint(std::sqrt(target / aspect)));
    if (bw > 0 && bw <= W && bh > 0 && bh <= H) {
      *attempts = int(k) + 1;
      return {int64_t((uint64_t(w[2]) * uint64_t(H - bh + 1)) >> 32),
              int64_t((uint64_t(w[3]) * uint64_t(W - bw + 1)) >> 32), bh, bw};
    }
  }
  *attempts = 11;
  return {-1, -1, -1, -1};  // the fallback is checked by hand below
}

TEST(RandomResizedCrop, BoxFollowsTorchvisionsProcedure) {
  const RandomResizedCrop rrc(16);
  std::vector<int64_t> indices(400);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = int64_t(i) * 7 + 3;
  const TransformContext ctx{11, 4, &indices, 2};
  int retried = 0;
  for (int64_t b = 0; b < int64_t(indices.size()); ++b) {
    int attempts = 0;
    const Box want = expected_box(23, 37, 11, 4, indices[size_t(b)], 2, 0.08, 1.0, 0.75, 4.0 / 3.0, &attempts);
    ASSERT_LE(attempts, 10);
    retried += attempts > 1;
    const Box got = rrc.box(23, 37, ctx, b);
    ASSERT_EQ(got.top, want.top) << b;
    ASSERT_EQ(got.left, want.left) << b;
    ASSERT_EQ(got.height, want.height) << b;
    ASSERT_EQ(got.width, want.width) << b;
  }
  EXPECT_GT(retried, 0);  // some draws missed the image and took another attempt
}

TEST(RandomResizedCrop, FallbackIsTheCentreCrop) {
  std::vector<int64_t> indices = {0, 1, 2};
  const TransformContext ctx{1, 0, &indices, 0};
  // A scale above 1 never fits, so every sample falls back.
  const RandomResizedCrop square(8, {2.0, 3.0}, {1.0, 1.0});
  auto eq = [](Box a, Box b) {
    return a.top == b.top && a.left == b.left && a.height == b.height && a.width == b.width;
  };
  EXPECT_TRUE(eq(square.box(10, 20, ctx, 0), Box{0, 5, 10, 10}));   // too wide: h = H
  EXPECT_TRUE(eq(square.box(20, 10, ctx, 1), Box{5, 0, 10, 10}));   // too tall: w = W
  const RandomResizedCrop wide(8, {2.0, 3.0});
  EXPECT_TRUE(eq(wide.box(10, 40, ctx, 2), Box{0, 13, 10, 13}));    // w = round(10 * 4/3)
  EXPECT_TRUE(eq(wide.box(30, 10, ctx, 2), Box{8, 0, 13, 10}));     // h = round(10 / (3/4))
  EXPECT_TRUE(eq(wide.box(12, 14, ctx, 2), Box{0, 0, 12, 14}));     // ratio within: whole image
}

TEST(RandomResizedCrop, PixelsAreTheBilinearResizeOfTheBox) {
  Generator gen(5);
  const Tensor x = randint(0, 256, {6, 3, 23, 37}, kUInt8, &gen);
  const std::vector<int64_t> indices = {40, 2, 17, 9, 33, 1};
  const auto rrc = std::make_shared<RandomResizedCrop>(12);
  const Compose pipe(8, {rrc});
  const Tensor out = pipe.apply(x, 3, indices);
  const Tensor outf = pipe.apply(x.to(kFloat32), 3, indices);
  ASSERT_EQ(out.sizes(), (Shape{6, 3, 12, 12}));
  const TransformContext ctx{8, 3, &indices, 0};
  for (int64_t b = 0; b < 6; ++b) {
    const Box bx = rrc->box(23, 37, ctx, b);
    const auto exact = bilinear_f64(x[b], 12, 12, bx.top, bx.left, bx.height, bx.width);
    std::vector<uint8_t> rounded;
    for (double e : exact) rounded.push_back(uint8_t(std::nearbyint(e)));
    expect_bilinear_equal(out[b].to_vector<uint8_t>(), rounded, exact);
    const auto f = outf[b].to_vector<float>();
    for (size_t i = 0; i < f.size(); ++i) ASSERT_NEAR(f[i], exact[i], 1e-3);
  }
  // A sample's crop depends on its index, not on its batch: sample 17 alone gives the same.
  const Tensor alone = pipe.apply(x.narrow(0, 2, 1), 3, {17});
  EXPECT_EQ(alone.to_vector<uint8_t>(), out.narrow(0, 2, 1).to_vector<uint8_t>());
  EXPECT_THROW_MSG(RandomResizedCrop(0), ValueError, "need size > 0");
  EXPECT_THROW_MSG(RandomResizedCrop(4, {0.5, 0.1}), ValueError, "scale (0.5, 0.1)");
}

}  // namespace
}  // namespace ignis::testing
