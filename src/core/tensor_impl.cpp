// Creating tensors and views at the TensorImpl level.
#include "core/tensor_impl.h"

#include <algorithm>
#include <numeric>

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

Tensor make_tensor_like_layout(const Shape& sizes, DType dtype, Device device,
                               const Tensor* layout_of) {
  const int64_t nd = int64_t(sizes.size());
  if (!layout_of || layout_of->sizes() != sizes || nd < 2 || layout_of->is_contiguous())
    return make_tensor(sizes, dtype, device);
  // Dims ordered from the largest stride to the smallest (ties, which only size-1 dims can
  // have in a dense layout, keep their order); dense means each stride is the product of the
  // sizes inside it in that order.
  const Shape& st = layout_of->strides();
  std::vector<int64_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return st[size_t(a)] > st[size_t(b)]; });
  Shape strides(sizes.size());
  int64_t expect = 1;
  for (int64_t k = nd - 1; k >= 0; --k) {
    const int64_t d = order[size_t(k)];
    if (sizes[size_t(d)] != 1 && st[size_t(d)] != expect) return make_tensor(sizes, dtype, device);
    strides[size_t(d)] = expect;
    expect *= sizes[size_t(d)];
  }
  Tensor flat = make_tensor({shape_numel(sizes)}, dtype, device);
  return make_view(flat, sizes, std::move(strides), 0);
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
