// Memory for tensors. Every device has an Allocator; storages return their memory to it.
// The CPU one caches freed blocks by size class (Note [CPU allocator caches]).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ignis/device.h"

namespace ignis::detail {

class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns memory aligned to at least 64 bytes, or throws OutOfMemoryError.
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  /// Hands cached, unused memory back to the system.
  virtual void empty_cache() {}
};

struct AllocatorStats {
  size_t allocated = 0;  // bytes held by live storages
  size_t reserved = 0;   // bytes obtained from the system (live + cached)
  size_t peak_allocated = 0;
  size_t system_allocations = 0;  // calls that went to the system
};

Allocator& cpu_allocator();
AllocatorStats cpu_allocator_stats();
/// The allocator of a device; throws DeviceError when the build has no backend for that
/// device type or the device does not exist (the backend's lookup says which).
Allocator& allocator_for(Device device);
/// Installs the allocator lookup of a device type (the CUDA backend calls this when it
/// registers): one allocator per device index; the lookup throws DeviceError for an absent
/// device.
void set_allocator(DeviceType type, Allocator& (*for_index)(int index));
/// The page-locked host allocator (pin_memory); throws DeviceError in a build without CUDA.
Allocator& pinned_allocator();
/// The pinned allocator when the build has one, else nullptr (never throws).
Allocator* pinned_allocator_if_built();
void set_pinned_allocator(Allocator* allocator);

}  // namespace ignis::detail
