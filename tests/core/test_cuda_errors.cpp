// Asking for a CUDA device that is not there: every entry point that needs one throws
// DeviceError saying why (no CUDA build, no usable device, or too few devices), and the
// queries never throw. These run everywhere: on a machine without a GPU they check the
// "none" answers; on a GPU machine, the out-of-range device index.
#include <fmt/format.h>

#include <fstream>
#include <string>

#include "ignis/cuda.h"
#include "ignis/data/dataloader.h"
#include "support/test_support.h"

namespace ignis {
namespace {

/// What the message says when there is no device at all, for this build.
std::string no_device_reason() {
  return cuda::is_built() ? "no CUDA device is available" : "no cuda backend";
}

TEST(CudaErrors, DeviceStringsParseTheIndex) {
  EXPECT_EQ(Device("cuda:1").index, 1);
  EXPECT_TRUE(Device("cuda:1").is_cuda());
  EXPECT_EQ(Device("cuda:12").str(), "cuda:12");
  EXPECT_THROW_MSG(Device("cuda:1x"), ValueError, "cannot parse device 'cuda:1x'");
  EXPECT_THROW_MSG(Device("cuda:"), ValueError, "cannot parse device 'cuda:'");
}

TEST(CudaErrors, WithoutADeviceEveryEntryPointSaysWhy) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(cuda::device_count(), 0);
  const std::string why = no_device_reason();
  EXPECT_THROW_MSG(zeros({2}, Device::cuda(0)), DeviceError, why);
  EXPECT_THROW_MSG(zeros({2}, Device::cuda(0)), DeviceError, "cuda:0");
  EXPECT_THROW_MSG(ones({2}).to(Device("cuda:1")), DeviceError, "cuda:1");
  EXPECT_THROW_MSG(ones({2}).cuda(), DeviceError, why);
  EXPECT_THROW_MSG(cuda::set_device(0), DeviceError, why);
  EXPECT_THROW_MSG(cuda::current_device(), DeviceError, why);
  EXPECT_THROW_MSG(cuda::get_device_properties(0), DeviceError, why);
  EXPECT_THROW_MSG(cuda::mem_get_info(0), DeviceError, why);
  EXPECT_THROW_MSG(cuda::synchronize(), DeviceError, why);
  EXPECT_THROW_MSG(cuda::Stream::create(), DeviceError, why);
  EXPECT_THROW_MSG(cuda::current_stream(), DeviceError, why);
  EXPECT_THROW_MSG(cuda::memory_stats(0), DeviceError, why);
  cuda::Event e;
  EXPECT_THROW_MSG(e.record(), DeviceError, why);
  EXPECT_TRUE(e.query());  // never recorded: nothing pending
  // Pinned memory needs the driver too; the message names the op.
  EXPECT_THROW_MSG(ones({4}).pin_memory(), DeviceError, "[pin_memory]");
  EXPECT_FALSE(ones({4}).is_pinned());
  // empty_cache has nothing to release and never throws.
  cuda::empty_cache();
  // A loader for a GPU is built (no residency without a device); its first batch says why.
  const auto data = std::make_shared<data::TensorDataset>(std::vector<Tensor>{ones({4, 2})});
  data::DataLoader loader(data, {.batch_size = 2, .device = Device::cuda(0)});
  EXPECT_FALSE(loader.gpu_resident());
  EXPECT_THROW_MSG(loader.begin(), DeviceError, why);
}

TEST(CudaErrors, AnAbsentDeviceIndexIsRejected) {
  const int n = cuda::device_count();
  const Device absent = Device::cuda(n);  // one past the last device
  if (n == 0) {
    EXPECT_THROW_MSG(empty({3}, absent), DeviceError, no_device_reason());
    return;
  }
  const std::string expected = fmt::format("cuda:{} requested but only {} CUDA device", n, n);
  EXPECT_THROW_MSG(empty({3}, absent), DeviceError, expected);
  EXPECT_THROW_MSG(cuda::set_device(n), DeviceError, expected);
  EXPECT_THROW_MSG(cuda::get_device_properties(n), DeviceError, expected);
  EXPECT_THROW_MSG(cuda::mem_get_info(n), DeviceError, expected);
  EXPECT_THROW_MSG(ones({2}).to(absent), DeviceError, expected);
}

TEST(CudaErrors, PinningAGpuTensorIsRefused) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  EXPECT_THROW_MSG(
      ones({2}, Device::cuda(0)).pin_memory(), DeviceError, "only CPU tensors can be pinned");
}

/// Whether a library whose file name contains `name` is mapped into this process.
bool library_mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(name) != std::string::npos) return true;
  return false;
}

// cuBLASLt (500+ MB) is opened on first use (src/cuda/cublaslt_loader.cpp), not when the
// process starts: not mapped before its first call, mapped after, and its version query (which
// needs no GPU) answers through the loaded library. ctest runs each test in its own process.
TEST(CudaErrors, CublasLtIsOpenedOnFirstUse) {
  if (!cuda::is_built()) GTEST_SKIP() << "no CUDA backend in this build";
  EXPECT_FALSE(library_mapped("libcublasLt"));
  EXPECT_GE(cuda::cublas_version(), 110000);  // cuBLAS 11 and later encode major * 10000
  EXPECT_TRUE(library_mapped("libcublasLt"));
}

}  // namespace
}  // namespace ignis
