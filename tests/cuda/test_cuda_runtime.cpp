// Devices, streams, events and the device caching allocator on a real GPU. Memory numbers
// follow from Note [Device caching allocator] (sizes rounded to 512 bytes; small pool of
// 2 MiB segments; large pool of 20 MiB segments below 10 MiB, exact 2 MiB multiples above).
#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
using testing::kGpu;
constexpr size_t MiB = size_t(1) << 20;

TEST(CudaRuntime, DeviceQueriesAndProperties) {
  IGNIS_REQUIRE_CUDA();
  EXPECT_GE(cuda::device_count(), 1);
  cuda::set_device(0);
  EXPECT_EQ(cuda::current_device(), 0);
  const cuda::DeviceProperties p = cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.total_memory, size_t(1) << 30);
  EXPECT_GE(p.major, 5);  // Ignis compiles for sm_90 by default; anything older is no target
  EXPECT_GE(p.minor, 0);
  EXPECT_GT(p.multiprocessor_count, 0);
  const cuda::DeviceProperties cur = cuda::get_device_properties();
  EXPECT_EQ(cur.name, p.name);
  cuda::synchronize();
  RecordProperty("gpu", p.name);
}

TEST(CudaRuntime, ComputeStreamIsNotTheLegacyStream) {
  IGNIS_REQUIRE_CUDA();
  const cuda::Stream s = cuda::current_stream();
  EXPECT_NE(s.handle(), nullptr);  // nullptr is the legacy default stream
  EXPECT_TRUE(s == cuda::default_stream());
  EXPECT_EQ(s.device(), 0);
}

TEST(CudaRuntime, StreamGuardSwitchesAndRestores) {
  IGNIS_REQUIRE_CUDA();
  const cuda::Stream before = cuda::current_stream();
  const cuda::Stream side = cuda::Stream::create();
  EXPECT_FALSE(side == before);
  {
    cuda::StreamGuard guard(side);
    EXPECT_TRUE(cuda::current_stream() == side);
    // Work on the side stream, then the default stream waits for it through an event. Busy
    // work queued ahead keeps x unwritten for a while: without the wait, y would read it.
    const Tensor a = randn({8192, 8192}, {kFloat32, kGpu}) * (1.0 / 90.5);
    Tensor busy = a;
    for (int i = 0; i < 4; ++i) busy = matmul(busy, a);
    Tensor x = arange(1 << 20, TensorOptions(kFloat32, kGpu)) * 2;
    cuda::Event done;
    done.record();
    cuda::StreamGuard back(before);
    before.wait(done);
    Tensor y = x + 1;  // on `before`, ordered after x by the event
    const Tensor expected = arange(1 << 20, kFloat32) * 2 + 1;
    EXPECT_TRUE(testing::equals_cpu(y, expected));
  }
  EXPECT_TRUE(cuda::current_stream() == before);
  side.synchronize();
  EXPECT_TRUE(side.query());
}

TEST(CudaRuntime, EventsTimeWork) {
  IGNIS_REQUIRE_CUDA();
  cuda::Event start(true), stop(true);
  Tensor x = ones({16 << 20}, TensorOptions(kFloat32, kGpu));
  start.record();
  for (int i = 0; i < 10; ++i) x.add_(1);
  stop.record();
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  const float ms = start.elapsed_time(stop);
  EXPECT_GT(ms, 0.0f);
  EXPECT_LT(ms, 10000.0f);
  EXPECT_EQ(x.sum().item<float>(), 11.0f * float(16 << 20));
  cuda::Event untimed;
  untimed.record();
  EXPECT_THROW(start.elapsed_time(untimed), ValueError);
}

TEST(CudaRuntime, AllocatorCachesAndCountsExactly) {
  IGNIS_REQUIRE_CUDA();
  cuda::synchronize();
  cuda::empty_cache();
  const cuda::MemoryStats base = cuda::memory_stats(0);
  {
    Tensor a = empty({int64_t(3 * MiB)}, TensorOptions(kUInt8, kGpu));  // large: 20 MiB segment
    const cuda::MemoryStats s = cuda::memory_stats(0);
    EXPECT_EQ(s.allocated, base.allocated + 3 * MiB);
    EXPECT_EQ(s.reserved, base.reserved + 20 * MiB);
    EXPECT_EQ(s.num_device_allocs, base.num_device_allocs + 1);
    Tensor b = empty({1000}, TensorOptions(kFloat32, kGpu));  // 4000 -> 4096 bytes, small pool
    EXPECT_EQ(cuda::memory_stats(0).allocated, base.allocated + 3 * MiB + 4096);
  }
  cuda::MemoryStats s = cuda::memory_stats(0);
  EXPECT_EQ(s.allocated, base.allocated);
  EXPECT_EQ(s.peak_allocated, std::max(base.peak_allocated, base.allocated + 3 * MiB + 4096));
  const size_t allocs = s.num_device_allocs;
  {
    Tensor again = empty({int64_t(3 * MiB)}, TensorOptions(kUInt8, kGpu));  // from the cache
    EXPECT_EQ(cuda::memory_stats(0).num_device_allocs, allocs);
  }
  cuda::empty_cache();
  s = cuda::memory_stats(0);
  EXPECT_EQ(s.reserved, base.reserved);
  EXPECT_GE(s.num_device_frees, base.num_device_frees + 2);
  cuda::reset_peak_memory_stats(0);
  EXPECT_EQ(cuda::memory_stats(0).peak_allocated, cuda::memory_stats(0).allocated);
}

TEST(CudaRuntime, OutOfMemoryIsAnIgnisErrorWithTheNumbers) {
  IGNIS_REQUIRE_CUDA();
  const size_t total = cuda::get_device_properties(0).total_memory;
  const size_t ooms = cuda::memory_stats(0).num_ooms;
  try {
    Tensor t = empty({int64_t(2 * total)}, TensorOptions(kUInt8, kGpu));
    FAIL() << "allocating twice the device memory succeeded";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[cuda:0 allocator] out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(2 * total) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bytes free"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bytes reserved"), std::string::npos) << msg;
  }
  EXPECT_EQ(cuda::memory_stats(0).num_ooms, ooms + 1);
  // The device is still usable.
  EXPECT_EQ(ones({4}, kGpu).sum().item<float>(), 4.0f);
}

}  // namespace
}  // namespace ignis
