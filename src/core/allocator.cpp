// The CPU caching allocator.
//
// Note [CPU allocator caches]
// On the virtual machines Ignis targets, the first touch of fresh memory costs ~11-15 us per
// 4 KiB page, and glibc returns blocks over its mmap threshold to the system on every free.
// An engine that mallocs its activations re-faults them every training step. So freed blocks
// are kept in per-size-class free lists and handed out again; blocks of 2 MiB and more come
// from mmap with MADV_HUGEPAGE (one fault per 2 MiB instead of per 4 KiB). Size classes are
// four per power of two, so a cached block wastes at most 25%. The cache is bounded
// (kMaxCachedBytes); past it, freed blocks go back to the system.
#include "core/allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace ignis::detail {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kHugeThreshold = size_t(2) << 20;
constexpr size_t kMaxCachedBytes = size_t(8) << 30;

size_t size_class(size_t n) {
  if (n <= 4096) return (n + kAlignment - 1) / kAlignment * kAlignment;
  // Four classes per power of two: round up to a multiple of 2^(floor(log2 n) - 2).
  const int log2 = 63 - __builtin_clzll(n);
  const size_t step = size_t(1) << (log2 - 2);
  size_t c = (n + step - 1) / step * step;
  if (c >= kHugeThreshold) c = (c + kHugeThreshold - 1) / kHugeThreshold * kHugeThreshold;
  return c;
}

class CpuCachingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    const size_t cls = size_class(std::max<size_t>(nbytes, 1));
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= cls;
        note_alloc(cls);
        return p;
      }
    }
    void* p = system_alloc(cls);
    if (!p) {
      empty_cache();  // give back what we hold, then try once more
      p = system_alloc(cls);
    }
    IGNIS_CHECK(p != nullptr, OutOfMemoryError,
                "[cpu allocator] out of memory: tried to allocate {} bytes ({} allocated, {} "
                "reserved)",
                nbytes, stats_.allocated, stats_.reserved);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.reserved += cls;
    stats_.system_allocations++;
    note_alloc(cls);
    return p;
  }

  void deallocate(void* p, size_t nbytes) override {
    if (!p) return;
    const size_t cls = size_class(std::max<size_t>(nbytes, 1));
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.allocated -= cls;
      if (cached_ + cls <= kMaxCachedBytes) {
        free_[cls].push_back(p);
        cached_ += cls;
        return;
      }
      stats_.reserved -= cls;
    }
    system_free(p, cls);
  }

  void empty_cache() override {
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks.swap(free_);
      stats_.reserved -= cached_;
      cached_ = 0;
    }
    for (auto& [cls, list] : blocks)
      for (void* p : list) system_free(p, cls);
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  static void* system_alloc(size_t cls) {
    if (cls >= kHugeThreshold) {
      void* p = mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return nullptr;
      madvise(p, cls, MADV_HUGEPAGE);  // advisory: ignored where THP is off
      return p;
    }
    return std::aligned_alloc(kAlignment, cls);
  }
  static void system_free(void* p, size_t cls) {
    if (cls >= kHugeThreshold) munmap(p, cls);
    else std::free(p);
  }
  void note_alloc(size_t cls) {
    stats_.allocated += cls;
    stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  }

  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
  AllocatorStats stats_;
};

CpuCachingAllocator& cpu_caching_allocator() {
  // Leaked on purpose: storages freed during static destruction still find it.
  static auto* a = new CpuCachingAllocator();
  return *a;
}

Allocator& (*g_allocators[kNumDeviceTypes])(int) = {};
Allocator* g_pinned = nullptr;

}  // namespace

void ensure_kernels_registered();  // src/core/dispatch.cpp: backends install allocators there

Allocator& cpu_allocator() { return cpu_caching_allocator(); }
AllocatorStats cpu_allocator_stats() { return cpu_caching_allocator().stats(); }

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  ensure_kernels_registered();
  auto* lookup = g_allocators[int(device.type)];
  IGNIS_CHECK(lookup != nullptr, DeviceError,
              "[allocator] {} requested but this build of Ignis has no {} backend (it was "
              "built without the CUDA toolkit)",
              device.str(), device_type_name(device.type));
  return lookup(device.index);
}

void set_allocator(DeviceType type, Allocator& (*for_index)(int)) {
  g_allocators[int(type)] = for_index;
}

Allocator* pinned_allocator_if_built() {
  ensure_kernels_registered();
  return g_pinned;
}

Allocator& pinned_allocator() {
  Allocator* a = pinned_allocator_if_built();
  IGNIS_CHECK(a != nullptr, DeviceError,
              "[pin_memory] pinned memory needs CUDA, but this build of Ignis has no cuda "
              "backend (it was built without the CUDA toolkit)");
  return *a;
}

void set_pinned_allocator(Allocator* allocator) { g_pinned = allocator; }

}  // namespace ignis::detail
