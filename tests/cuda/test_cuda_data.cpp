// The data pipeline's GPU half against its CPU half: the batch transforms' CUDA kernel
// (src/cuda/data_transforms.cu). The random windows are drawn on the host from the same
// Philox streams and the per-pixel math is shared, so every GPU batch must equal the CPU's
// bit for bit.
#include "cuda/cuda_test_util.h"
#include "ignis/data/transforms.h"

namespace ignis {
namespace {
using namespace ignis::data;
using testing::equals_cpu;
using testing::kGpu;
using TF = std::shared_ptr<BatchTransform>;

std::vector<int64_t> sample_ids(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = 7 * i + 3;
  return ids;
}

TEST(CudaData, BatchTransformsMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  Generator gen(5);
  const Tensor x = randint(0, 256, {24, 3, 13, 11}, kUInt8, &gen);
  const std::vector<int64_t> ids = sample_ids(24);
  const auto to_float = std::make_shared<ToFloat>();
  const auto norm = std::make_shared<Normalize>(
      std::vector<double>{0.49, 0.48, 0.45}, std::vector<double>{0.25, 0.24, 0.26});
  const auto flip = std::make_shared<RandomHorizontalFlip>();
  const std::vector<std::pair<std::string, std::vector<TF>>> pipelines = {
      // Fused: uint8 in, normalised float out, in one kernel.
      {"float norm crop flip", {to_float, norm, std::make_shared<RandomCrop>(13, 11, 4), flip}},
      {"float flip crop reflect",
       {to_float, flip, std::make_shared<RandomCrop>(9, 10, 4, PadMode::Reflect)}},
      {"float norm flip", {to_float, norm, flip}},
      // Unfused: the geometry kernel on uint8 and on float32 batches, and cutout.
      {"uint8 crop flip cutout",
       {std::make_shared<RandomCrop>(12, 12, 3), flip, std::make_shared<Cutout>(5)}},
      {"uint8 reflect crop, then float",
       {std::make_shared<RandomCrop>(13, 11, 5, PadMode::Reflect), to_float, norm}},
  };
  for (const auto& [name, tf] : pipelines) {
    SCOPED_TRACE(name);
    const Compose pipe(91, tf);
    for (int64_t epoch : {0, 2}) {
      const Tensor cpu = pipe.apply(x, epoch, ids);
      EXPECT_TRUE(equals_cpu(pipe.apply(x.to(kGpu), epoch, ids), cpu)) << "epoch " << epoch;
    }
  }
}

}  // namespace
}  // namespace ignis
