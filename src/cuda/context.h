// What the CUDA backend's files share: device checks with clear errors, a device guard, the
// stream kernels run on, and the allocators (src/cuda/runtime.cpp, stream.cpp, allocator.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/caching_allocator.h"
#include "ignis/device.h"

namespace ignis::cuda::detail {

/// Throws DeviceError unless device `index` exists: "[op] cuda:3 requested but ...", saying
/// whether Ignis saw no driver, no device, or fewer devices.
void require_device(int index, const char* op);
/// The current device, checked (DeviceError when there is none).
int checked_current_device(const char* op);

/// Makes a device current for a scope (a no-op when it already is), restoring the previous
/// one when that device has a context already (Note [Devices without a context]).
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// Whether device `index` has its primary context already (making it current would not
/// create one); true when the driver cannot say.
bool has_primary_context(int index);

/// The current device when it has a context, else the first device that has one, else the
/// current device: where host-side CUDA work (pinned allocations) can run without creating a
/// context on a GPU the program does not use.
int device_with_context();

/// This thread's current stream of device (Ignis's compute stream unless another was set).
cudaStream_t current_cuda_stream(int device);
/// The same, safe to call from a storage's deleter while the thread or the process ends
/// (Note [Streams of a free]); null when the compute stream is current and was never made.
cudaStream_t current_cuda_stream_for_deleter(int device);

/// The caching allocator of device `index` (Note [Device caching allocator]).
ignis::detail::CachingAllocator& device_allocator(int index);
/// The pinned host allocator, and whether ptr is the start of one of its blocks' storages.
ignis::detail::CachingAllocator& pinned_caching_allocator();
/// Marks a tensor storage's memory (its base pointer) as used by work on stream, so its
/// block is not reused before that work is done (pinned host or device memory).
void record_storage_stream(void* base, Device device, bool pinned, cudaStream_t stream);

}  // namespace ignis::cuda::detail
