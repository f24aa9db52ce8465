// Creating tensors and views at the TensorImpl level.
#include "core/tensor_impl.h"

#include "core/error.h"

namespace ignis::detail {

std::shared_ptr<StorageImpl> StorageImpl::make(size_t nbytes, Device device) {
  Allocator& a = allocator_for(device);
  void* p = nbytes ? a.allocate(nbytes) : nullptr;
  return std::make_shared<StorageImpl>(p, nbytes, device, nbytes ? &a : nullptr);
}

Tensor make_tensor(const Shape& sizes, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->numel = shape_numel(sizes);
  impl->storage = StorageImpl::make(size_t(impl->numel * itemsize(dtype)), device);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->offset = offset;
  impl->numel = shape_numel(sizes);
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

}  // namespace ignis::detail
