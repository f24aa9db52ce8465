// Factories: empty, zeros, ones, full, arange, linspace, eye, the _like family, tensor(),
// scalar_tensor and from_blob.
#include <cmath>
#include <cstring>

#include "core/dispatch.h"
#include "core/memory_format.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/elementwise.h"  // check_fill_value

namespace ignis {

using namespace detail;

namespace {
DType scalar_default(const Scalar& v) {
  return v.is_bool() ? kBool : v.is_integral() ? kInt64 : default_dtype();
}
}  // namespace

Tensor empty(const Shape& shape, TensorOptions opts) {
  check_sizes(shape, "empty");
  return make_tensor_in_format(shape, opts.dtype_or(default_dtype()), opts.device_or(Device::cpu()),
                               opts.memory_format.value_or(MemoryFormat::contiguous), "empty");
}
Tensor zeros(const Shape& shape, TensorOptions opts) { return empty(shape, opts).zero_(); }
Tensor ones(const Shape& shape, TensorOptions opts) { return empty(shape, opts).fill_(1); }
Tensor full(const Shape& shape, const Scalar& value, TensorOptions opts) {
  if (!opts.dtype) opts.dtype = scalar_default(value);
  detail::check_fill_value(value, *opts.dtype, "full");
  return empty(shape, opts).fill_(value);
}

Tensor arange(const Scalar& end, TensorOptions opts) { return arange(0, end, 1, opts); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  const bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const DType t = opts.dtype_or(all_int ? kInt64 : default_dtype());
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  IGNIS_CHECK(st != 0, ValueError, "[arange] step must be nonzero");
  IGNIS_CHECK(std::isfinite(s) && std::isfinite(e), ValueError,
              "[arange] start and end must be finite, got {} and {}", s, e);
  IGNIS_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError,
              "[arange] upper bound {} and lower bound {} are inconsistent with step sign {}", e, s,
              st);
  const int64_t n = all_int ? (end.to_int() - start.to_int() + step.to_int() -
                               (step.to_int() > 0 ? 1 : -1)) /
                                  step.to_int()
                            : int64_t(std::ceil((e - s) / st));
  const Device device = opts.device_or(Device::cpu());
  Tensor out = make_tensor({n}, t, device);
  if (n > 0) range_kernel.get(device)(out, s, st, std::nullopt);
  return out;
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions opts) {
  IGNIS_CHECK(steps >= 0, ValueError, "[linspace] number of steps must be non-negative, got {}",
              steps);
  const Device device = opts.device_or(Device::cpu());
  Tensor out = make_tensor({steps}, opts.dtype_or(default_dtype()), device);
  if (steps == 0) return out;
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  range_kernel.get(device)(out, start, step, end);
  return out;
}

Tensor eye(int64_t n, std::optional<int64_t> m_opt, TensorOptions opts) {
  const int64_t m = m_opt.value_or(n);
  IGNIS_CHECK(n >= 0 && m >= 0, ValueError, "[eye] sizes must be non-negative, got {} x {}", n, m);
  Tensor out = zeros({n, m}, opts);
  const int64_t k = std::min(n, m);
  if (k > 0) out.as_strided({k}, {m + 1}, 0).fill_(1);
  return out;
}

Tensor empty_like(const Tensor& t, TensorOptions opts) {
  IGNIS_CHECK(t.defined(), ValueError, "[empty_like] undefined tensor");
  const DType dtype = opts.dtype_or(t.dtype());
  const Device device = opts.device_or(t.device());
  const MemoryFormat format = opts.memory_format.value_or(MemoryFormat::preserve);
  if (format == MemoryFormat::preserve) return make_tensor_preserving(t, dtype, device);
  return make_tensor_in_format(t.sizes(), dtype, device, format, "empty_like");
}
Tensor zeros_like(const Tensor& t, TensorOptions opts) { return empty_like(t, opts).zero_(); }
Tensor ones_like(const Tensor& t, TensorOptions opts) { return empty_like(t, opts).fill_(1); }
Tensor full_like(const Tensor& t, const Scalar& v, TensorOptions opts) {
  return empty_like(t, opts).fill_(v);
}
Tensor rand_like(const Tensor& t, TensorOptions opts) { return empty_like(t, opts).uniform_(); }
Tensor randn_like(const Tensor& t, TensorOptions opts) { return empty_like(t, opts).normal_(); }

template <class T>
Tensor tensor(const std::vector<T>& values, std::optional<Shape> shape, TensorOptions opts) {
  Shape s = shape.value_or(Shape{int64_t(values.size())});
  check_sizes(s, "tensor");
  IGNIS_CHECK(shape_numel(s) == int64_t(values.size()), ShapeError,
              "[tensor] {} values do not fill shape {}", values.size(), shape_str(s));
  Tensor host = make_tensor(s, dtype_of<T>, Device::cpu());
  if constexpr (std::is_same_v<T, bool>) {
    bool* p = static_cast<bool*>(host.data_ptr());
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(host.data_ptr(), values.data(), values.size() * sizeof(T));
  }
  return host.to(opts.device_or(Device::cpu()), opts.dtype_or(dtype_of<T>));
}
template Tensor tensor(const std::vector<float>&, std::optional<Shape>, TensorOptions);
template Tensor tensor(const std::vector<double>&, std::optional<Shape>, TensorOptions);
template Tensor tensor(const std::vector<BFloat16>&, std::optional<Shape>, TensorOptions);
template Tensor tensor(const std::vector<Half>&, std::optional<Shape>, TensorOptions);
template Tensor tensor(const std::vector<int64_t>&, std::optional<Shape>, TensorOptions);
template Tensor tensor(const std::vector<int32_t>&, std::optional<Shape>, TensorOptions);
template Tensor tensor(const std::vector<uint8_t>&, std::optional<Shape>, TensorOptions);
template Tensor tensor(const std::vector<bool>&, std::optional<Shape>, TensorOptions);

Tensor scalar_tensor(const Scalar& value, TensorOptions opts) {
  if (!opts.dtype) opts.dtype = scalar_default(value);
  return full({}, value, opts);
}

Tensor from_blob(void* data, const Shape& shape, DType dtype, std::optional<Shape> strides,
                 void (*deleter)(void*), Device device) {
  check_sizes(shape, "from_blob");
  Shape st = strides.value_or(contiguous_strides(shape));
  IGNIS_CHECK(st.size() == shape.size(), ShapeError,
              "[from_blob] shape {} and strides {} differ in length", shape_str(shape),
              shape_str(st));
  int64_t extent = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    IGNIS_CHECK(st[i] >= 0, ValueError, "[from_blob] negative stride in {}", shape_str(st));
    if (shape[i] == 0) extent = 0;
    else if (extent) extent += (shape[i] - 1) * st[i];
  }
  IGNIS_CHECK(data != nullptr || extent == 0, ValueError, "[from_blob] null data pointer");
  auto storage = std::make_shared<StorageImpl>(data, size_t(extent * itemsize(dtype)), device, nullptr);
  storage->user_deleter = deleter;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = shape;
  impl->strides = std::move(st);
  impl->numel = shape_numel(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace ignis
