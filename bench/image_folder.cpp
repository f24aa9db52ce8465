// ImageFolder decode throughput over ROOT, images/s as one JSON line:
//   default      an eager ImageFolder built (every file decoded and resized / cropped to
//                --size, in parallel over --threads), the median of --repeats builds;
//   --lazy W     a lazy ImageFolder read through a DataLoader (batches of 128, shuffled, W
//                worker threads), one epoch after a warm-up epoch: decoding every epoch,
//                as torchvision's ImageFolder does.
// bench/image_folder.py writes the tree and measures torchvision's ImageFolder on it.
// Usage: image_folder ROOT [--threads N] [--size S] [--repeats R] [--lazy W]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench_timing.h"
#include "ignis/data/dataloader.h"
#include "ignis/data/image_folder.h"
#include "ignis/ops.h"

using namespace ignis;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: image_folder ROOT [--threads N] [--size S] [--repeats R]\n");
    return 2;
  }
  const std::string root = argv[1];
  int threads = 1, repeats = 3, lazy = -1;
  int64_t size = 32;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--size")) size = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--lazy")) lazy = std::atoi(argv[i + 1]);
  }
  if (lazy >= 0) {
    set_num_threads(1);  // the workers are the parallelism
    auto folder = std::make_shared<data::ImageFolder>(
        root, data::ImageFolderOptions{.size = size, .eager = false});
    data::DataLoader loader(
        folder, {.batch_size = 128, .shuffle = true, .seed = 1, .num_workers = lazy});
    for (auto& b : loader) (void)b;  // warm-up epoch
    int64_t n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& [x, y] : loader) n += x.size(0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "{\"bench\": \"image_folder_lazy\", \"engine\": \"ignis\", \"workers\": %d, "
        "\"images\": %lld, \"seconds\": %.4f, \"images_per_s\": %.0f}\n",
        lazy,
        (long long)n,
        s,
        double(n) / s);
    return 0;
  }
  set_num_threads(threads);
  int64_t n = 0;
  const double s = bench::time_median(
      [&] { n = data::ImageFolder(root, {.size = size}).size(); }, 0.0, 1, repeats);
  std::printf(
      "{\"bench\": \"image_folder\", \"engine\": \"ignis\", \"threads\": %d, \"images\": %lld, "
      "\"seconds\": %.4f, \"images_per_s\": %.0f}\n",
      threads,
      (long long)n,
      s,
      double(n) / s);
  return 0;
}
