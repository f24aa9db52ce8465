// The figures of a failed allocation of Ignis's caching allocators (CUDA device memory and
// pinned host memory, Note [Device caching allocator]) as numbers, so a program can report
// them in its own words or act on them, e.g. retry with a smaller batch. The allocators throw
// AllocatorOutOfMemoryError; code that only needs to know memory ran out catches its base,
// OutOfMemoryError, whose message holds the same figures. (A header of its own: error.h, which
// every file includes, stays the list of error kinds.)
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "ignis/error.h"

namespace ignis {

class AllocatorOutOfMemoryError : public OutOfMemoryError {
 public:
  AllocatorOutOfMemoryError(
      const std::string& message,
      std::string memory,
      size_t requested,
      size_t free_bytes,
      size_t allocated,
      size_t reserved)
      : OutOfMemoryError(message),
        memory_(std::move(memory)),
        requested_(requested),
        free_bytes_(free_bytes),
        allocated_(allocated),
        reserved_(reserved) {}
  /// What ran out: "cuda:0", "pinned host".
  const std::string& memory() const { return memory_; }
  /// Bytes the failed allocation asked for.
  size_t requested() const { return requested_; }
  /// Bytes free on the device as it reported them, after the cache was released.
  size_t free_bytes() const { return free_bytes_; }
  /// Bytes of live blocks (tensors in use), rounded to the allocator's 512.
  size_t allocated() const { return allocated_; }
  /// Bytes the allocator holds from the device: live blocks and its cache.
  size_t reserved() const { return reserved_; }

 private:
  std::string memory_;
  size_t requested_, free_bytes_, allocated_, reserved_;
};

}  // namespace ignis
