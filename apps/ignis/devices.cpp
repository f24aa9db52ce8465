// `ignis devices`: what this machine offers Ignis. The CPU's model name comes from
// /proc/cpuinfo (Linux); the thread count is what OpenMP will use for the CPU kernels. Each
// GPU with its memory and compute capability, and the driver, CUDA runtime, cuBLAS and cuDNN
// versions, come from ignis/cuda.h (all "none" in a build without CUDA).
#include <fmt/format.h>
#include <ignis/ignis.h>
#include <omp.h>

#include <fstream>
#include <string>
#include <thread>

#include "openmp_wait.h"
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

// CUDA's encoding: 1000 * major + 10 * minor (12040 = 12.4).
std::string cuda_version_text(int v) {
  return v ? fmt::format("{}.{}", v / 1000, v % 1000 / 10) : std::string("none");
}

// cuBLAS and cuDNN 9: major * 10000 + minor * 100 + patch; cuDNN 8: major * 1000 + ...
std::string library_version_text(int v, int major_unit) {
  return v ? fmt::format("{}.{}.{}", v / major_unit, v % major_unit / 100, v % 100)
           : std::string("none");
}

}  // namespace

int run_devices() {
  fmt::print("ignis {}\n", ignis::version());
  fmt::print("cpu     {}\n", cpu_model());
  fmt::print(
      "        {} hardware threads, {} OpenMP threads\n",
      std::thread::hardware_concurrency(),
      omp_get_max_threads());
  fmt::print("        waiting threads: {}\n", openmp_wait_text());
  // Which library multiplies matrices matters as much as the thread count for CPU speed.
  fmt::print("        matrix products: {}\n", ignis::cpu_matmul_library());
  if (!ignis::cuda::is_built()) {
    fmt::print("gpu     no GPU: this build of Ignis has no CUDA backend\n");
  } else if (!ignis::cuda::is_available()) {
    // Asking for the device's properties throws with the runtime's reason (no driver, a driver
    // older than the runtime, no device): the line a user needs to fix it.
    std::string why = "no usable device was found";
    try {
      (void)ignis::cuda::get_device_properties(0);
    } catch (const ignis::DeviceError& e) {
      why = e.what();
    }
    fmt::print("gpu     no GPU: built with CUDA, but {}\n", why);
  } else {
    // A library that cannot be loaded is named with the reason, and the devices still listed.
    const auto version_of = [](const auto& get, bool cudnn) -> std::string {
      try {
        const int v = get();
        return library_version_text(v, cudnn && v < 90000 ? 1000 : 10000);
      } catch (const std::exception& e) {
        return fmt::format("unavailable ({})", e.what());
      }
    };
    fmt::print(
        "cuda    driver {}, runtime {}, cuBLAS {}, cuDNN {}\n",
        cuda_version_text(ignis::cuda::driver_version()),
        cuda_version_text(ignis::cuda::runtime_version()),
        version_of([] { return ignis::cuda::cublas_version(); }, false),
        version_of([] { return ignis::cuda::cudnn_version(); }, true));
    for (int i = 0; i < ignis::cuda::device_count(); ++i) {
      const ignis::cuda::DeviceProperties p = ignis::cuda::get_device_properties(i);
      fmt::print(
          "cuda:{}  {}: {:.1f} GiB, compute capability {}.{}, {} multiprocessors\n",
          i,
          p.name,
          double(p.total_memory) / double(1 << 30),
          p.major,
          p.minor,
          p.multiprocessor_count);
    }
  }
  return 0;
}

}  // namespace ignis_cli
