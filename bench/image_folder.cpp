// ImageFolder decode throughput: builds an eager ImageFolder over ROOT (every file decoded,
// resized / cropped to --size, in parallel over --threads) and reports images/s, the median
// of --repeats constructions. One JSON line. bench/image_folder.py writes a CIFAR-like tree
// and measures torchvision's ImageFolder on it; compare_image_folder.sh runs both.
// Usage: image_folder ROOT [--threads N] [--size S] [--repeats R]
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench_timing.h"
#include "ignis/data/image_folder.h"
#include "ignis/ops.h"

using namespace ignis;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: image_folder ROOT [--threads N] [--size S] [--repeats R]\n");
    return 2;
  }
  const std::string root = argv[1];
  int threads = 1, repeats = 3;
  int64_t size = 32;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--size")) size = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
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
