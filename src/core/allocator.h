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
/// The allocator of a device; throws DeviceError when that device type has none registered.
Allocator& allocator_for(Device device);
/// Installs the allocator of a device type (the CUDA backend calls this when it registers).
void set_allocator(DeviceType type, Allocator* allocator);

}  // namespace ignis::detail
