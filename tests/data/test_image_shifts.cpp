// The deterministic image views of test-time augmentation (hflip, translate) and the
// alternating flip, each against per-pixel index arithmetic written here from the documented
// rule (ignis/data/transforms.h).
#include <gtest/gtest.h>

#include <cstdlib>

#include "ignis/data/transforms.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

constexpr int64_t B = 3, C = 2, H = 5, W = 6;

Tensor batch() { return random_tensor({B, C, H, W}, -1, 1, 7).to(kFloat32); }

/// PyTorch's 'reflect' padding index: the edge pixel is not repeated.
int64_t reflect(int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; }

std::vector<double> shifted(const std::vector<double>& v, int64_t dy, int64_t dx, bool zeros) {
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const int64_t sy = y - dy, sx = x - dx;
          const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
          out.push_back(zeros && !inside
                            ? 0.0
                            : v[size_t(((b * C + c) * H + reflect(sy, H)) * W + reflect(sx, W))]);
        }
  return out;
}

TEST(ImageShifts, HflipMirrorsEveryImage) {
  const Tensor x = batch();
  const auto v = values_of(x);
  std::vector<double> expect;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t col = i % W, row_start = i - col;
    expect.push_back(v[size_t(row_start + W - 1 - col)]);
  }
  EXPECT_TRUE(all_close(hflip(x), expect, 0, 0));
  EXPECT_TRUE(all_close(hflip(hflip(x)), v, 0, 0));
}

TEST(ImageShifts, TranslateReflectsOrZeroesTheUncoveredBorder) {
  const Tensor x = batch();
  const auto v = values_of(x);
  for (auto [dy, dx] : {std::pair<int64_t, int64_t>{1, 1}, {-1, -1}, {2, -3}, {0, 0}, {-4, 5}}) {
    SCOPED_TRACE(::testing::Message() << "dy " << dy << " dx " << dx);
    EXPECT_TRUE(all_close(translate(x, dy, dx, PadMode::Reflect), shifted(v, dy, dx, false), 0, 0));
    EXPECT_TRUE(all_close(translate(x, dy, dx, PadMode::Zeros), shifted(v, dy, dx, true), 0, 0));
  }
  // uint8 batches take the same path.
  const Tensor u = (x * 50 + 100).to(kUInt8);
  EXPECT_TRUE(all_close(translate(u, 1, -1, PadMode::Reflect),
                        shifted(values_of(u), 1, -1, false), 0, 0));
}

TEST(ImageShifts, BadInputIsNamed) {
  EXPECT_THROW_MSG(translate(batch(), H, 0, PadMode::Reflect), ValueError, "[translate]");
  EXPECT_THROW_MSG(hflip(zeros({2, 3})), ShapeError, "[hflip]");
  EXPECT_THROW_MSG(hflip(zeros({1, 1, 2, 2}, kInt64)), DTypeError, "[hflip]");
}

TEST(AlternatingFlip, EpochZeroDrawsThenOddEpochsInvert) {
  const std::vector<int64_t> indices = {4, 11, 0, 7, 123, 9, 2, 31};
  const uint64_t seed = 5;
  const RandomHorizontalFlip alternating(0.5, /*alternate=*/true), plain(0.5);
  int flipped_at_zero = 0;
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    const TransformContext ctx{seed, epoch, &indices, 3};
    for (int64_t s = 0; s < int64_t(indices.size()); ++s) {
      // The rule: the epoch-0 draw of this sample, inverted in odd epochs.
      const bool first = word_uniform(transform_words(seed, 0, indices[size_t(s)], 3)[0]) < 0.5;
      EXPECT_EQ(alternating.flips(ctx, s), first != (epoch % 2 == 1))
          << "epoch " << epoch << " sample " << s;
      if (epoch == 0) {
        EXPECT_EQ(alternating.flips(ctx, s), plain.flips(ctx, s));
        flipped_at_zero += first;
      }
    }
  }
  // Both outcomes occur, or the test would not see the inversion.
  EXPECT_GT(flipped_at_zero, 0);
  EXPECT_LT(flipped_at_zero, int(indices.size()));
  // The pixels follow the decision.
  const Tensor x = random_tensor({int64_t(indices.size()), 1, 2, 3}, 0, 1, 3).to(kFloat32);
  const TransformContext odd{seed, 1, &indices, 3};
  const Tensor out = alternating(x, odd), mirrored = hflip(x);
  for (int64_t s = 0; s < int64_t(indices.size()); ++s)
    EXPECT_TRUE(all_close(out[s], values_of(alternating.flips(odd, s) ? mirrored[s] : x[s]), 0, 0));
}

}  // namespace
}  // namespace ignis::testing
