// Tensor's metadata accessors and value reading (item, to_vector, check_dtype_).
#include "core/error.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"

namespace ignis {

using detail::shape_str;

namespace {
const detail::TensorImpl& checked(const Tensor& t, const char* what) {
  IGNIS_CHECK(t.defined(), ValueError, "[{}] called on an undefined tensor", what);
  return *t.impl();
}
}  // namespace

int64_t Tensor::dim() const { return int64_t(checked(*this, "dim").sizes.size()); }
const Shape& Tensor::sizes() const { return checked(*this, "sizes").sizes; }
const Shape& Tensor::strides() const { return checked(*this, "strides").strides; }
int64_t Tensor::size(int64_t d) const {
  return sizes()[detail::wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const {
  return strides()[detail::wrap_dim(d, dim(), "stride")];
}
int64_t Tensor::storage_offset() const { return checked(*this, "storage_offset").offset; }
int64_t Tensor::numel() const { return checked(*this, "numel").numel; }
DType Tensor::dtype() const { return checked(*this, "dtype").dtype; }
Device Tensor::device() const { return checked(*this, "device").device(); }
bool Tensor::is_contiguous() const {
  const auto& i = checked(*this, "is_contiguous");
  return detail::is_contiguous_layout(i.sizes, i.strides);
}
bool Tensor::is_same_storage(const Tensor& other) const {
  return defined() && other.defined() && impl()->storage == other.impl()->storage;
}
void* Tensor::data_ptr() const { return checked(*this, "data_ptr").data(); }

void Tensor::check_dtype_(DType t, const char* what) const {
  IGNIS_CHECK(dtype() == t, DTypeError, "[{}] requested {} but the tensor is {}", what,
              dtype_name(t), dtype_name(dtype()));
}

Scalar Tensor::item() const {
  IGNIS_CHECK(numel() == 1, ValueError,
              "[item] a tensor with {} elements (shape {}) cannot be converted to a scalar",
              numel(), shape_str(sizes()));
  Tensor c = is_cpu() ? *this : cpu();
  return visit_dtype(dtype(), [&]<class T>() -> Scalar {
    return Scalar(*static_cast<const T*>(c.data_ptr()));
  });
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = to(Device::cpu(), dtype_of<T>).contiguous();
  const T* p = static_cast<const T*>(c.data_ptr());
  return std::vector<T>(p, p + c.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<BFloat16> Tensor::to_vector<BFloat16>() const;
template std::vector<Half> Tensor::to_vector<Half>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template <>
std::vector<bool> Tensor::to_vector<bool>() const {
  Tensor c = to(Device::cpu(), kBool).contiguous();
  const bool* p = static_cast<const bool*>(c.data_ptr());
  return std::vector<bool>(p, p + c.numel());
}

}  // namespace ignis
