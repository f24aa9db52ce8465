// The Tensor: a reference-counted handle to an n-dimensional strided view of typed storage on
// a device. Copying a Tensor shares the data (like PyTorch); clone() copies it.
// Methods here mirror PyTorch's Tensor methods and forward to the free functions of ops.h.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ignis/device.h"
#include "ignis/dtype.h"
#include "ignis/error.h"
#include "ignis/scalar.h"
#include "ignis/shape.h"

namespace ignis {

namespace detail {
struct TensorImpl;
}
class Generator;

/// The order of a tensor's elements in memory (PyTorch's torch.memory_format).
/// contiguous: row-major (NCHW for images); channels_last: a 4-D [N, C, H, W] tensor stored
/// NHWC (strides [HWC, 1, WC, C]); preserve: keep the source's layout (conversions, _like).
enum class MemoryFormat : uint8_t { contiguous, channels_last, preserve };
const char* memory_format_name(MemoryFormat f);

/// dtype, device and memory format of a new tensor. Converts from a DType, a Device or a
/// MemoryFormat, so factories read `zeros({2, 3})`, `zeros({2, 3}, kFloat64)`,
/// `randn({64, 10}, device)`, `zeros({2, 3}, {kInt64, Device::cuda()})` or
/// `empty({8, 3, 32, 32}, MemoryFormat::channels_last)`. An unset dtype means the factory's
/// default; an unset memory format means contiguous (preserve for the _like factories).
struct TensorOptions {
  std::optional<DType> dtype;
  std::optional<Device> device;
  std::optional<MemoryFormat> memory_format;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype(d) {}
  TensorOptions(Device dev) : device(dev) {}
  TensorOptions(MemoryFormat f) : memory_format(f) {}
  TensorOptions(DType d, Device dev) : dtype(d), device(dev) {}
  TensorOptions(Device dev, DType d) : dtype(d), device(dev) {}
  TensorOptions(DType d, MemoryFormat f) : dtype(d), memory_format(f) {}
  TensorOptions(Device dev, MemoryFormat f) : device(dev), memory_format(f) {}
  TensorOptions(DType d, Device dev, MemoryFormat f) : dtype(d), device(dev), memory_format(f) {}
  DType dtype_or(DType fallback) const { return dtype.value_or(fallback); }
  Device device_or(Device fallback) const { return device.value_or(fallback); }
};

/// How division rounds: true division, floor (Python's //) or toward zero (C's /).
enum class RoundingMode : uint8_t { True, Floor, Trunc };

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  int64_t dim() const;
  const Shape& sizes() const;
  const Shape& shape() const { return sizes(); }
  /// Size of dimension d; negative d counts from the end.
  int64_t size(int64_t d) const;
  const Shape& strides() const;
  int64_t stride(int64_t d) const;
  int64_t storage_offset() const;
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  int64_t element_size() const { return itemsize(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  bool is_contiguous() const;
  /// True when the elements lie in memory in format's order without gaps, by PyTorch's rule:
  /// dims of size 1 are ignored, so an [N, 1, H, W] or [N, C, 1, 1] tensor can be contiguous
  /// in both formats. channels_last is false for tensors that are not 4-D; preserve asks
  /// is_contiguous().
  bool is_contiguous(MemoryFormat format) const;
  /// The layout an op should give results made from this tensor (PyTorch's
  /// suggest_memory_format): channels_last for a 4-D tensor whose strides order its dims as
  /// NHWC (ambiguous size-1 cases resolve to contiguous, as in PyTorch), contiguous otherwise.
  MemoryFormat suggest_memory_format() const;
  /// True when both handles view the same storage.
  bool is_same_storage(const Tensor& other) const;
  /// Address of the first element (storage base + offset).
  void* data_ptr() const;
  /// Typed address of the first element; throws DTypeError when T is not the tensor's dtype.
  template <class T>
  T* data_ptr() const {
    check_dtype_(dtype_of<T>, "data_ptr");
    return static_cast<T*>(data_ptr());
  }
  detail::TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<detail::TensorImpl>& impl_ptr() const { return impl_; }

  // ---- reading values (these synchronise with the device) -----------------------------
  /// The only element of a one-element tensor, converted to T.
  template <class T>
  T item() const {
    return item().to<T>();
  }
  Scalar item() const;
  /// All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;
  /// PyTorch-style text: tensor([[1., 2.], [3., 4.]], dtype=float64).
  std::string str() const;

  // ---- conversion and copies -----------------------------------------------------------
  // to() returns this tensor when nothing would change (same dtype and device, copy false,
  // and format preserve or already suggested by the strides); otherwise a copy laid out in
  // `format`, where preserve keeps a dense layout (channels-last, a transpose) and makes
  // anything else contiguous. Recorded for autograd: the gradient flows back unchanged.
  Tensor to(DType t, bool copy = false, MemoryFormat format = MemoryFormat::preserve) const;
  Tensor to(Device d, bool non_blocking = false, bool copy = false,
            MemoryFormat format = MemoryFormat::preserve) const;
  Tensor to(Device d, DType t, bool non_blocking = false, bool copy = false,
            MemoryFormat format = MemoryFormat::preserve) const;
  /// The same values laid out in format (x.to(memory_format=...) in PyTorch). channels_last
  /// needs a 4-D tensor (ValueError otherwise).
  Tensor to(MemoryFormat format, bool copy = false) const;
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor cuda(int index = 0) const { return to(Device::cuda(index)); }
  /// A copy of this CPU tensor in page-locked (pinned) host memory, from which to(cuda,
  /// non_blocking = true) copies asynchronously; this tensor if it is pinned already.
  /// DeviceError without CUDA.
  Tensor pin_memory() const;
  /// True when this tensor's memory comes from the pinned host allocator.
  bool is_pinned() const;
  /// This tensor if already contiguous, else a contiguous copy.
  Tensor contiguous() const;
  /// This tensor if is_contiguous(format), else a copy in format (contiguous or
  /// channels_last; preserve is a ValueError, as in PyTorch).
  Tensor contiguous(MemoryFormat format) const;
  /// A copy with its own storage, laid out as `format` (preserve: this tensor's dense
  /// layout, else contiguous).
  Tensor clone(MemoryFormat format = MemoryFormat::preserve) const;
  /// Copies src (broadcast to this shape, converted to this dtype) into this tensor.
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();

  // ---- views (share storage) -------------------------------------------------------------
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(const Shape& shape) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, const Shape& sizes) const;
  Tensor as_strided(const Shape& size, const Shape& stride,
                    std::optional<int64_t> storage_offset = std::nullopt) const;

  // ---- arithmetic (see ops.h for the rules) ----------------------------------------------
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& o) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor mul(const Scalar& o) const;
  Tensor div(const Tensor& o, RoundingMode mode = RoundingMode::True) const;
  Tensor div(const Scalar& o, RoundingMode mode = RoundingMode::True) const;
  Tensor pow(const Tensor& e) const;
  Tensor pow(const Scalar& e) const;
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& o);
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& o);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& o);
  Tensor& div_(const Tensor& o, RoundingMode mode = RoundingMode::True);
  Tensor& div_(const Scalar& o, RoundingMode mode = RoundingMode::True);
  Tensor& pow_(const Scalar& e);
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max);

  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor relu() const;
  Tensor& neg_();
  Tensor& abs_();
  Tensor& exp_();
  Tensor& log_();
  Tensor& sqrt_();
  Tensor& sigmoid_();
  Tensor& tanh_();
  Tensor& relu_();
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);

  Tensor eq(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;

  // ---- reductions ----------------------------------------------------------------------
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;

  // ---- linear algebra ------------------------------------------------------------------
  Tensor matmul(const Tensor& o) const;
  Tensor mm(const Tensor& o) const;

  // ---- autograd (see ignis/autograd.h) ----------------------------------------------------
  bool requires_grad() const;
  /// Marks a leaf tensor as one whose gradient backward() accumulates into grad().
  /// Throws ValueError for non-floating dtypes and for non-leaf tensors asked to stop.
  Tensor& requires_grad_(bool on = true);
  /// The gradient accumulated by backward() (undefined until then).
  const Tensor& grad() const;
  /// The gradient slot itself, for optimizers and for zeroing or replacing it.
  Tensor& mutable_grad();
  /// True for tensors created by the user (not by a differentiable op on tensors that
  /// require grad).
  bool is_leaf() const;
  /// Computes the gradient of this tensor with respect to every leaf that requires grad and
  /// accumulates it into their grad(). `gradient` defaults to 1 for a one-element tensor
  /// and is required otherwise. The graph is freed unless retain_graph; create_graph records
  /// the backward pass itself so it can be differentiated again.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false,
                bool create_graph = false) const;
  /// A tensor sharing this one's data but cut from the graph (requires_grad false).
  Tensor detach() const;
  /// Keeps the gradient of a non-leaf tensor in grad() after backward().
  void retain_grad();
  /// Calls hook(grad) when this tensor's gradient is computed; a defined result replaces the
  /// gradient. Returns a handle for remove_hook.
  int64_t register_hook(std::function<Tensor(const Tensor&)> hook);
  void remove_hook(int64_t handle);
  /// How many times the data was modified in place (shared by all views of the storage).
  uint64_t version() const;

  // ---- random fill (in place, from the default or given generator) ------------------------
  Tensor& uniform_(double from = 0, double to = 1, Generator* gen = nullptr);
  Tensor& normal_(double mean = 0, double std = 1, Generator* gen = nullptr);
  Tensor& bernoulli_(double p = 0.5, Generator* gen = nullptr);

 private:
  void check_dtype_(DType t, const char* what) const;
  std::shared_ptr<detail::TensorImpl> impl_;
};

Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Scalar& b);
Tensor& operator-=(Tensor& a, const Scalar& b);
Tensor& operator*=(Tensor& a, const Scalar& b);
Tensor& operator/=(Tensor& a, const Scalar& b);
// Comparisons return bool tensors (as in PyTorch), not a C++ bool.
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&&(const Tensor& a, const Tensor& b);
Tensor operator||(const Tensor& a, const Tensor& b);
Tensor operator!(const Tensor& a);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace ignis
