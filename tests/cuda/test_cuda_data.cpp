// The data pipeline's GPU half against its CPU half: the batch transforms' CUDA kernel
// (src/cuda/data_transforms.cu) and the loader on a GPU (Note [Loader on a GPU],
// src/data/dataloader.cpp), both the GPU-resident data set and host batches copied on the
// copy stream. The random windows are drawn on the host from the same Philox streams and the
// per-pixel math is shared, so every GPU batch must equal the CPU's bit for bit.
#include "cuda/cuda_test_util.h"
#include "ignis/data/dataloader.h"
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
      // Fusion stops at the cutout, so the crop and flip after it run on float32 batches.
      {"float cutout, then crop flip",
       {to_float, norm, std::make_shared<Cutout>(5), std::make_shared<RandomCrop>(12, 12, 3),
        flip}},
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

/// CIFAR-shaped uint8 images and int64 labels, deterministic from the seed.
std::shared_ptr<TensorDataset> images(int64_t n, uint64_t seed) {
  Generator gen(seed);
  return std::make_shared<TensorDataset>(std::vector<Tensor>{
      randint(0, 256, {n, 3, 16, 16}, kUInt8, &gen), randint(0, 10, {n}, kInt64, &gen)});
}

Compose augment() {
  return Compose(
      17,
      {std::make_shared<ToFloat>(),
       std::make_shared<Normalize>(
           std::vector<double>{0.5, 0.4, 0.3}, std::vector<double>{0.2, 0.25, 0.3}),
       std::make_shared<RandomCrop>(16, 16, 2),
       std::make_shared<RandomHorizontalFlip>()});
}

/// Runs two epochs of `gpu` and of the same loader on the CPU and compares every batch.
void expect_same_batches(DataLoader& gpu, DataLoader& cpu) {
  ASSERT_EQ(gpu.size(), cpu.size());
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto g = gpu.begin();
    int64_t count = 0;
    for (auto& c : cpu) {
      ASSERT_FALSE(g == gpu.end()) << "batch " << count;
      EXPECT_EQ(g->indices, c.indices);
      EXPECT_EQ(g->epoch, c.epoch);
      ASSERT_EQ(g->fields.size(), c.fields.size());
      for (size_t f = 0; f < c.fields.size(); ++f)
        EXPECT_TRUE(equals_cpu(g->fields[f], c.fields[f]))
            << "epoch " << epoch << " batch " << count << " field " << f;
      ++g, ++count;
    }
    EXPECT_TRUE(g == gpu.end());
    EXPECT_EQ(count, cpu.size());
  }
}

TEST(CudaData, GpuResidentLoaderGivesTheCpuBatches) {
  IGNIS_REQUIRE_CUDA();
  const auto data = images(300, 3);
  const Compose aug = augment();
  DataLoaderOptions opt{.batch_size = 64, .shuffle = true, .seed = 11, .transform = aug};
  DataLoader cpu(data, opt);
  opt.device = kGpu;
  DataLoader gpu(data, opt);
  EXPECT_TRUE(gpu.gpu_resident());  // 230 kB, the default share of free memory
  expect_same_batches(gpu, cpu);
  // A split: only its rows go to the device, indexed as the loader indexes the subset.
  std::vector<int64_t> odd;
  for (int64_t i = 299; i > 0; i -= 2) odd.push_back(i);
  const auto part = std::make_shared<Subset>(data, odd);
  DataLoader part_gpu(part, opt);
  opt.device.reset();
  DataLoader part_cpu(part, opt);
  EXPECT_TRUE(part_gpu.gpu_resident());
  expect_same_batches(part_gpu, part_cpu);
  opt.device = kGpu;
  // Kept as uint8 on the device: the batches before the transform are the raw bytes.
  opt.transform = nullptr;
  DataLoader raw_gpu(data, opt);
  opt.device.reset();
  DataLoader raw_cpu(data, opt);
  expect_same_batches(raw_gpu, raw_cpu);
}

TEST(CudaData, ResidencyFollowsTheConfiguredShareOfFreeMemory) {
  IGNIS_REQUIRE_CUDA();
  const auto data = images(10, 4);
  DataLoaderOptions opt{.batch_size = 4, .device = kGpu, .gpu_resident_fraction = 0};
  EXPECT_FALSE(DataLoader(data, opt).gpu_resident());
  // A share that cannot hold 10 images of 768 bytes on any device.
  const double share = 1000.0 / double(cuda::mem_get_info(0).total);
  opt.gpu_resident_fraction = share;
  EXPECT_FALSE(DataLoader(data, opt).gpu_resident());
  opt.gpu_resident_fraction = 1;
  EXPECT_TRUE(DataLoader(data, opt).gpu_resident());
  opt.gpu_resident_fraction = 1.5;
  EXPECT_THROW_MSG((void)DataLoader(data, opt), ValueError, "gpu_resident_fraction");
  // A Subset of a TensorDataset (a split) is tensor-backed; other data sets never resident.
  opt.gpu_resident_fraction = 1;
  const auto subset = std::make_shared<Subset>(data, std::vector<int64_t>{1, 3, 5});
  EXPECT_TRUE(DataLoader(subset, opt).gpu_resident());
  const auto concat = std::make_shared<ConcatDataset>(std::vector<DatasetPtr>{data, data});
  EXPECT_FALSE(DataLoader(concat, opt).gpu_resident());
}

TEST(CudaData, HostBatchesCopiedOnTheCopyStreamGiveTheCpuBatches) {
  IGNIS_REQUIRE_CUDA();
  const auto data = images(200, 5);
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < 200; i += 2) picked.push_back(i);
  const auto host = std::make_shared<Subset>(data, picked);
  const Compose aug = augment();
  for (int workers : {0, 2}) {
    SCOPED_TRACE(workers);
    DataLoaderOptions opt{
        .batch_size = 16, .shuffle = true, .seed = 12, .num_workers = workers, .transform = aug};
    DataLoader cpu(host, opt);
    opt.device = kGpu;
    opt.gpu_resident_fraction = 0;  // not resident: each batch is copied
    DataLoader gpu(host, opt);
    EXPECT_FALSE(gpu.gpu_resident());
    expect_same_batches(gpu, cpu);
  }
}

TEST(CudaData, StoppingMidEpochWithACopyInFlightIsClean) {
  IGNIS_REQUIRE_CUDA();
  const auto data = images(256, 6);
  const auto host = std::make_shared<Subset>(data, std::vector<int64_t>(200, 7));
  for (int workers : {0, 3}) {
    auto loader = std::make_unique<DataLoader>(
        host,
        DataLoaderOptions{
            .batch_size = 8, .num_workers = workers, .device = kGpu, .gpu_resident_fraction = 0});
    int64_t seen = 0;
    for (auto& [x, y] : *loader) {
      EXPECT_TRUE(x.is_cuda());
      if (++seen == 3) break;  // batch 4's copy is under way
    }
    auto it = loader->begin();  // a new epoch while the last one's batches may be in flight
    EXPECT_TRUE(it->x().is_cuda());
    loader.reset();  // destroyed with a live iterator and a staged copy
    EXPECT_EQ(
        it->x().cpu().to_vector<uint8_t>(),
        data->tensors()[0].select(0, 7).expand({8, 3, 16, 16}).contiguous().to_vector<uint8_t>());
  }
}

}  // namespace
}  // namespace ignis
