// Loader throughput on CIFAR-shaped data: batches of 128 uint8 [3, 32, 32] images through
// ToFloat, Normalize, RandomCrop(32, padding 4) and RandomHorizontalFlip, shuffled; images/s
// for 0 workers (the calling thread) and 1 and 2 worker threads, each op using one thread.
// One JSON line per row. Options: --images N (default 20000), --epochs E (default 3).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ignis/data/dataloader.h"
#include "ignis/data/transforms.h"
#include "ignis/ops.h"

using namespace ignis;
using namespace ignis::data;

int main(int argc, char** argv) {
  int64_t n = 20000;
  int epochs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--images")) n = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--epochs")) epochs = std::atoi(argv[i + 1]);
  }
  set_num_threads(1);  // parallelism comes from the loader's workers only
  auto ds = std::make_shared<SyntheticDataset>(n, Shape{3, 32, 32}, 10, 1);
  auto pipe = std::make_shared<Compose>(
      0,
      std::vector<std::shared_ptr<BatchTransform>>{
          std::make_shared<ToFloat>(),
          std::make_shared<Normalize>(
              std::vector<double>{0.4914, 0.4822, 0.4465},
              std::vector<double>{0.2470, 0.2435, 0.2616}),
          std::make_shared<RandomCrop>(32, 32, 4),
          std::make_shared<RandomHorizontalFlip>()});
  for (int workers : {0, 1, 2}) {
    DataLoader loader(
        ds,
        {.batch_size = 128,
         .shuffle = true,
         .seed = 1,
         .num_workers = workers,
         .transform = [pipe](Batch& b) { (*pipe)(b); }});
    for (auto& b : loader) (void)b;  // warm-up epoch
    const auto t0 = std::chrono::steady_clock::now();
    int64_t images = 0;
    for (int e = 0; e < epochs; ++e)
      for (auto& [x, y] : loader) images += x.size(0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "{\"bench\": \"data_loader\", \"engine\": \"ignis\", \"workers\": %d, \"batch\": 128, \"images\": %lld, "
        "\"seconds\": %.4f, \"images_per_s\": %.0f}\n",
        workers,
        (long long)images,
        s,
        double(images) / s);
  }
  return 0;
}
