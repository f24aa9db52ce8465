// TensorImpl and StorageImpl: what a Tensor handle points to. Kept small on purpose:
// storage + offset, sizes, strides, dtype (device comes from the storage).
#pragma once

#include <atomic>
#include <memory>

#include "core/allocator.h"
#include "core/shape.h"
#include "ignis/tensor.h"

namespace ignis::detail {

/// A block of memory on one device, freed through its allocator or a user deleter.
struct StorageImpl {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  Allocator* allocator = nullptr;      // owner of data, or
  void (*user_deleter)(void*) = nullptr;  // from_blob's deleter (may be null: not owned)
  /// Bumped by every in-place write through any view (Note [Version counter]).
  std::atomic<uint64_t> version{0};

  StorageImpl(void* d, size_t n, Device dev, Allocator* a) : data(d), nbytes(n), device(dev), allocator(a) {}
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl() {
    if (allocator) allocator->deallocate(data, nbytes);
    else if (user_deleter) user_deleter(data);
  }
  /// Allocates nbytes on device.
  static std::shared_ptr<StorageImpl> make(size_t nbytes, Device device);
};

struct AutogradMeta;  // src/autograd/meta.h

struct TensorImpl {
  std::shared_ptr<StorageImpl> storage;
  int64_t offset = 0;  // in elements
  Shape sizes;
  Shape strides;  // in elements; Note [Broadcast strides are zero]
  int64_t numel = 0;
  DType dtype = kFloat32;
  /// Null for tensors that never took part in autograd.
  std::shared_ptr<AutogradMeta> autograd;

  Device device() const { return storage->device; }
  char* data() const { return static_cast<char*>(storage->data) + offset * itemsize(dtype); }
};

/// A new contiguous tensor (uninitialised memory).
Tensor make_tensor(const Shape& sizes, DType dtype, Device device);
/// A new tensor of `sizes` laid out like *layout_of when that tensor has the same sizes and a
/// dense, permuted layout (channels-last, a transpose): elementwise results keep their
/// input's memory format, as in PyTorch, so a channels-last network stays channels-last.
/// Otherwise (null, other sizes, gaps or overlaps) a contiguous tensor.
Tensor make_tensor_like_layout(const Shape& sizes, DType dtype, Device device,
                               const Tensor* layout_of);
/// A view of t's storage with other sizes/strides/offset (and optionally another dtype of
/// the same item size).
Tensor make_view(const Tensor& t, Shape sizes, Shape strides, int64_t offset);

// Note [Version counter]
// Every in-place write (copy_, fill_, the `_` ops, scatter_ …) goes through
// check_writable_layout (src/ops/write_checks.h), which bumps the storage's version. Autograd
// saves a tensor's version with the tensor; if backward finds it changed, the saved value
// was overwritten and backward throws instead of computing a wrong gradient.

// Note [Broadcast strides are zero]
// A dimension that is broadcast (expand, or an operand of size 1 in an elementwise op) has
// stride 0: every index along it reads the same element. Kernels must therefore never write
// through a tensor with a zero stride and size > 1; in-place ops check this
// (check_writable_layout in src/ops).

}  // namespace ignis::detail
