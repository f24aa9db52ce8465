// Note [Fused CPU pipeline] (ignis/data/transforms.h): Compose runs ToFloat, Normalize, one
// RandomCrop and one RandomHorizontalFlip as one pass on uint8 CPU batches. Each pipeline
// here is run both through Compose and one transform at a time (each called directly with its
// position as stream); the two must agree bit for bit, in every fusable arrangement and in
// the ones that fall back.
#include <gtest/gtest.h>

#include "ignis/data/transforms.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;
using T = std::shared_ptr<BatchTransform>;

Tensor one_by_one(uint64_t seed, const std::vector<T>& tf, const Tensor& x, int64_t epoch,
                  const std::vector<int64_t>& indices) {
  Tensor out = x;
  for (size_t k = 0; k < tf.size(); ++k) out = (*tf[k])(out, TransformContext{seed, epoch, &indices, uint32_t(k)});
  return out;
}

TEST(FusedTransforms, BitForBitTheUnfusedPipeline) {
  Generator gen(9);
  const Tensor x = randint(0, 256, {16, 3, 9, 11}, kUInt8, &gen);
  std::vector<int64_t> indices(16);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = int64_t(i * 13 + 1);
  const auto norm = std::make_shared<Normalize>(std::vector<double>{0.49, 0.48, 0.45},
                                                std::vector<double>{0.25, 0.24, 0.26});
  const auto to_float = std::make_shared<ToFloat>();
  const auto flip = std::make_shared<RandomHorizontalFlip>();
  const std::vector<std::pair<std::string, std::vector<T>>> pipelines = {
      {"float norm crop flip", {to_float, norm, std::make_shared<RandomCrop>(9, 11, 4), flip}},
      {"float norm flip crop", {to_float, norm, flip, std::make_shared<RandomCrop>(7, 6, 3)}},
      {"float crop", {to_float, std::make_shared<RandomCrop>(12, 5, 2)}},
      {"float norm flip", {to_float, norm, flip}},
      {"float flip crop reflect", {to_float, flip, std::make_shared<RandomCrop>(9, 11, 4, PadMode::Reflect)}},
      {"float norm crop flip cutout", {to_float, norm, std::make_shared<RandomCrop>(8, 8, 1), flip, std::make_shared<Cutout>(3)}},
      {"float only (not fused)", {to_float, norm}},
      {"two crops (second unfused)", {to_float, std::make_shared<RandomCrop>(9, 11, 2), std::make_shared<RandomCrop>(5, 5, 1)}},
  };
  for (const auto& [name, tf] : pipelines) {
    SCOPED_TRACE(name);
    const Compose pipe(77, tf);
    for (int64_t epoch : {0, 3}) {
      const Tensor fused = pipe.apply(x, epoch, indices);
      const Tensor plain = one_by_one(77, tf, x, epoch, indices);
      ASSERT_EQ(fused.dtype(), kFloat32);
      ASSERT_EQ(fused.sizes(), plain.sizes());
      EXPECT_EQ(fused.to_vector<float>(), plain.to_vector<float>());
    }
  }
  // A crop that does not fit still fails with RandomCrop's message.
  const Compose bad(1, {to_float, std::make_shared<RandomCrop>(30, 30, 1)});
  EXPECT_THROW_MSG(bad.apply(x, 0, indices), ShapeError, "does not fit");
}

}  // namespace
}  // namespace ignis::testing
