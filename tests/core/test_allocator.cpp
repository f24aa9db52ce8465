// The CPU caching allocator reuses freed blocks (Note [CPU allocator caches]): a second
// tensor of the same size gets the cached block without a new system allocation, memory is
// 64-byte aligned, and accounting returns to its baseline when tensors die.
#include "core/allocator.h"
#include "support/test_support.h"

using namespace ignis;

TEST(CpuAllocator, ReusesFreedBlocksAndAligns) {
  const auto before = detail::cpu_allocator_stats();
  void* first = nullptr;
  {
    Tensor a = empty({3 << 20}, kFloat32);  // 12 MiB: huge-page path
    first = a.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  const auto mid = detail::cpu_allocator_stats();
  {
    Tensor b = empty({3 << 20}, kFloat32);
    EXPECT_EQ(b.data_ptr(), first);  // same cached block
    const auto during = detail::cpu_allocator_stats();
    EXPECT_EQ(during.system_allocations, mid.system_allocations);
    EXPECT_GE(during.allocated, before.allocated + (size_t(12) << 20));
  }
  EXPECT_EQ(detail::cpu_allocator_stats().allocated, before.allocated);
  // Sizes that share a size class share blocks; small blocks are aligned too.
  for (int64_t n : {1, 3, 17, 100, 1000, 5000}) {
    Tensor t = empty({n}, kUInt8);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u) << n;
  }
}
