// GPU data loading throughput, one JSON line per row: CIFAR-shaped uint8 images (50,000 x 3 x
// 32 x 32, int64 labels) through the DataLoader with ToFloat + Normalize + RandomCrop(32,
// padding 4) + RandomHorizontalFlip at batch 512, each batch consumed by a trivial "model"
// (one sum on the GPU), so the loader is what is timed. Rows: the GPU-resident data set
// (gathered and augmented on the device) and host batches copied on the copy stream (0 and 4
// workers). images/s over two whole epochs after a warm-up epoch, wall clock with the device
// synchronised at the end. Exits 77 without a GPU.
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "ignis/cuda.h"
#include "ignis/data/dataloader.h"
#include "ignis/data/transforms.h"
#include "ignis/ignis.h"

namespace {
using namespace ignis;
using namespace ignis::data;

void run(const char* name, const DatasetPtr& data, DataLoaderOptions opt) {
  DataLoader loader(data, std::move(opt));
  Tensor total = zeros({}, TensorOptions(kFloat32, Device::cuda(0)));
  auto epoch = [&] {
    int64_t images = 0;
    for (auto& [x, y] : loader) {
      total.add_(sum(x));
      images += x.size(0);
    }
    return images;
  };
  epoch();  // warm-up: allocator, pinned cache, residency
  cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t images = epoch() + epoch();
  cuda::synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(
      "{{\"engine\": \"ignis\", \"device\": \"cuda\", \"row\": \"{}\", \"resident\": {}, "
      "\"images/s\": {:.0f}}}\n",
      name,
      loader.gpu_resident() ? "true" : "false",
      double(images) / s);
}
}  // namespace

int main() {
  if (!cuda::is_available()) {
    fmt::print(stderr, "gpu_loader: no CUDA device\n");
    return 77;
  }
  const auto data = std::make_shared<SyntheticDataset>(50000, Shape{3, 32, 32}, 10, 1);
  const Compose augment(
      7,
      {std::make_shared<ToFloat>(),
       std::make_shared<Normalize>(
           std::vector<double>{0.49, 0.48, 0.45}, std::vector<double>{0.25, 0.24, 0.26}),
       std::make_shared<RandomCrop>(32, 32, 4),
       std::make_shared<RandomHorizontalFlip>()});
  DataLoaderOptions opt{
      .batch_size = 512,
      .shuffle = true,
      .seed = 3,
      .drop_last = true,
      .device = Device::cuda(0),
      .transform = augment};
  run("loader gpu-resident, crop+flip+normalise on the GPU", data, opt);
  opt.gpu_resident_fraction = 0;
  run("loader host batches, copy stream, 0 workers", data, opt);
  opt.num_workers = 4;
  run("loader host batches, copy stream, 4 workers", data, opt);
}
