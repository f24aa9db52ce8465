// `ignis devices`: what this machine offers Ignis. The CPU's model name comes from
// /proc/cpuinfo (Linux); the thread count is what OpenMP will use for the CPU kernels.
#include <fmt/format.h>
#include <ignis/ignis.h>
#include <omp.h>

#include <fstream>
#include <string>
#include <thread>

#include "options.h"

namespace ignis_cli {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

}  // namespace

int run_devices() {
  fmt::print("ignis {}\n", ignis::version());
  fmt::print("cpu     {}\n", cpu_model());
  fmt::print(
      "        {} hardware threads, {} OpenMP threads\n",
      std::thread::hardware_concurrency(),
      omp_get_max_threads());
  if (!ignis::cuda::is_built()) {
    fmt::print("cuda    not available: this build of Ignis has no CUDA backend\n");
  } else if (!ignis::cuda::is_available()) {
    fmt::print("cuda    not available: built with CUDA, but no usable device was found\n");
  } else {
    fmt::print(
        "cuda    available: {} device(s) (cuda:0 .. cuda:{})\n",
        ignis::cuda::device_count(),
        ignis::cuda::device_count() - 1);
  }
  return 0;
}

}  // namespace ignis_cli
