// The CUDA device allocator and the pinned host allocator: the caching policy of
// src/core/caching_allocator.h (Note [Device caching allocator]) over cudaMalloc /
// cudaHostAlloc, with CUDA events for blocks used on several streams.
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "ignis/cuda.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::CachingAllocator;
using ignis::detail::RawMemory;

/// Events of both raw memories: created on the recorded stream's device.
class EventsOnStreams : public RawMemory {
 public:
  EventId record_event(Stream s) override {
    const auto stream = reinterpret_cast<cudaStream_t>(s);
    int device = 0;
    IGNIS_CUDA_CHECK(cudaStreamGetDevice(stream, &device), "allocator");
    DeviceGuard guard(device);
    cudaEvent_t e = nullptr;
    IGNIS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "allocator");
    const cudaError_t recorded = cudaEventRecord(e, stream);
    if (recorded != cudaSuccess) cudaEventDestroy(e);  // not leaked when the record fails
    IGNIS_CUDA_CHECK(recorded, "allocator");
    return reinterpret_cast<EventId>(e);
  }
  bool event_done(EventId e) override {
    const cudaError_t err = cudaEventQuery(reinterpret_cast<cudaEvent_t>(e));
    if (still_running(err)) return false;
    IGNIS_CUDA_CHECK(err, "allocator");
    return true;
  }
  void wait_event(EventId e) override {
    IGNIS_CUDA_CHECK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(e)), "allocator");
  }
  void destroy_event(EventId e) override {
    IGNIS_CUDA_CHECK(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(e)), "allocator");
  }
};

class DeviceMemory final : public EventsOnStreams {
 public:
  explicit DeviceMemory(int device) : device_(device) {}
  void* allocate(size_t n) override {
    DeviceGuard guard(device_);
    void* p = nullptr;
    // A graph's pool takes new segments during its capture: cudaMalloc is legal there, but
    // the thread-local capture mode counts it as unsafe (Note [Whole-step capture]).
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    const cudaError_t err = cudaMalloc(&p, n);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // out of memory is not sticky; the policy decides what follows
      return nullptr;
    }
    IGNIS_CUDA_CHECK(err, "allocator");
    return p;
  }
  void release(void* p, size_t) override {
    DeviceGuard guard(device_);
    IGNIS_CUDA_CHECK(cudaFree(p), "allocator");
  }
  size_t free_bytes() override {
    DeviceGuard guard(device_);
    size_t free = 0, total = 0;
    IGNIS_CUDA_CHECK(cudaMemGetInfo(&free, &total), "allocator");
    return free;
  }

 private:
  int device_;
};

class PinnedMemory final : public EventsOnStreams {
 public:
  void* allocate(size_t n) override {
    // On a device that has a context (Note [Devices without a context]); portable, so every
    // device's copies treat the memory as pinned whichever device allocated it.
    DeviceGuard guard(device_with_context());
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, n, cudaHostAllocPortable);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    IGNIS_CUDA_CHECK(err, "pin_memory");
    return p;
  }
  void release(void* p, size_t) override {
    DeviceGuard guard(device_with_context());
    IGNIS_CUDA_CHECK(cudaFreeHost(p), "pin_memory");
  }
  size_t free_bytes() override { return 0; }  // not known for host memory
};

/// Frees p for a storage's destructor, which must not throw: a CUDA error there (after an
/// earlier sticky error, or while the runtime unloads at exit) is reported instead of
/// terminating the process, and the block is held back (a failed event record: retried by
/// a later call) or leaked. device >= 0: p is that device's memory, freed
/// under the thread's current stream of it (a use there when it is not p's own stream).
void free_from_destructor(CachingAllocator& cache, void* p, int device = -1) noexcept {
  try {
    RawMemory::Stream current = 0;
    if (device >= 0)
      current = reinterpret_cast<RawMemory::Stream>(current_cuda_stream_for_deleter(device));
    cache.free(p, current);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ignis: a free of cached memory failed: %s\n", e.what());
  }
}

/// One device's allocator as seen by storages: allocates on the current stream.
class DeviceAllocator final : public ignis::detail::Allocator {
 public:
  explicit DeviceAllocator(int device)
      : device_(device), raw_(device), cache_(raw_, fmt::format("cuda:{}", device)) {}
  void* allocate(size_t n) override {
    return cache_.allocate(n, reinterpret_cast<RawMemory::Stream>(current_cuda_stream(device_)));
  }
  void deallocate(void* p, size_t) override { free_from_destructor(cache_, p, device_); }
  void empty_cache() override { cache_.empty_cache(); }
  CachingAllocator& cache() { return cache_; }

 private:
  int device_;
  DeviceMemory raw_;
  CachingAllocator cache_;
};

/// Pinned host memory: one pool (stream key 0); record_stream guards async copies.
class PinnedAllocator final : public ignis::detail::Allocator {
 public:
  PinnedAllocator() : cache_(raw_, "pinned host", /*shared_by_devices=*/true) {}
  void* allocate(size_t n) override {
    require_device(0, "pin_memory");  // pinned memory needs a driver and a device
    return cache_.allocate(n, 0);
  }
  void deallocate(void* p, size_t) override { free_from_destructor(cache_, p); }
  void empty_cache() override { cache_.empty_cache(); }
  CachingAllocator& cache() { return cache_; }

 private:
  PinnedMemory raw_;
  CachingAllocator cache_;
};

/// Created once per device and never destroyed, nor are the tables that find them: storages
/// freed and graphs (cuda::Graph releases its pool here) destroyed during static destruction
/// still find their allocator.
DeviceAllocator& device_adapter(int index) {
  static auto* once = new std::vector<std::once_flag>(static_cast<size_t>(device_count()));
  static auto* all = new std::vector<DeviceAllocator*>(static_cast<size_t>(device_count()));
  std::call_once(
      (*once)[size_t(index)], [&] { (*all)[size_t(index)] = new DeviceAllocator(index); });
  return *(*all)[size_t(index)];
}

PinnedAllocator& pinned_adapter() {
  static auto* a = new PinnedAllocator();
  return *a;
}

ignis::detail::Allocator& allocator_for_index(int index) {
  require_device(index, "allocator");
  return device_adapter(index);
}

}  // namespace

CachingAllocator& device_allocator(int index) {
  require_device(index, "allocator");
  return device_adapter(index).cache();
}

CachingAllocator& pinned_caching_allocator() { return pinned_adapter().cache(); }

void record_storage_stream(void* base, Device device, bool pinned, cudaStream_t stream) {
  const auto s = reinterpret_cast<RawMemory::Stream>(stream);
  if (pinned) pinned_adapter().cache().record_stream(base, s);
  else if (device.is_cuda()) device_adapter(device.index).cache().record_stream(base, s);
}

void register_allocators() {
  ignis::detail::set_allocator(DeviceType::CUDA, &allocator_for_index);
  ignis::detail::set_pinned_allocator(&pinned_adapter());
}

}  // namespace ignis::cuda::detail

namespace ignis::cuda {

MemoryStats memory_stats(int device) {
  if (device < 0) device = current_device();
  const auto s = detail::device_allocator(device).stats();
  MemoryStats m;
  m.allocated = s.allocated;
  m.reserved = s.reserved;
  m.peak_allocated = s.peak_allocated;
  m.peak_reserved = s.peak_reserved;
  m.num_device_allocs = s.raw_allocations;
  m.num_device_frees = s.raw_releases;
  m.num_alloc_retries = s.retries;
  m.num_ooms = s.ooms;
  return m;
}

void reset_peak_memory_stats(int device) {
  if (device < 0) device = current_device();
  detail::device_allocator(device).reset_peak();
}

void empty_cache() {
  for (int d = 0; d < device_count(); ++d) detail::device_adapter(d).empty_cache();
  detail::pinned_adapter().empty_cache();
}

}  // namespace ignis::cuda
