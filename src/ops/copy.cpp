// Copies and conversions: copy_, contiguous, clone, to(dtype), to(device), fill_, zero_.
#include "autograd/record.h"
#include "core/dispatch.h"
#include "core/graph_capture.h"
#include "core/memory_format.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/elementwise.h"  // check_fill_value, fill_unchecked
#include "ops/write_checks.h"

namespace ignis {

using namespace detail;

Tensor& Tensor::copy_(const Tensor& src_in) {
  IGNIS_CHECK(defined() && src_in.defined(), ValueError, "[copy_] undefined tensor");
  if (needs_grad({this, &src_in}))
    return inplace_with_autograd(*this, "copy", [&](const Tensor&) {
      // clone() makes the result a recorded op even when src is a leaf.
      return src_in.to(device(), dtype()).expand(sizes()).clone();
    });
  check_writable_layout(*this, "copy_");
  if (numel() == 0) {
    broadcast_shape(src_in.sizes(), sizes(), "copy_");
    return *this;
  }
  const Shape target = broadcast_shape(src_in.sizes(), sizes(), "copy_");
  IGNIS_CHECK(target == sizes(), ShapeError, "[copy_] source of shape {} does not broadcast to {}",
              shape_str(src_in.sizes()), shape_str(sizes()));
  Tensor src = src_in;
  if (src.device() != device()) {
    // Cross-device: convert on the source device, transfer contiguous bytes, then place.
    Tensor staged = src.to(dtype()).contiguous();
    Tensor landing = is_contiguous() && staged.sizes() == sizes()
                         ? *this
                         : make_tensor(staged.sizes(), dtype(), device());
    transfer_kernel.get(device().is_cpu() ? src.device() : device())(landing, staged, false);
    if (landing.impl() == impl()) return *this;
    src = landing;
  }
  if (partially_overlaps(*this, src)) src = src.clone();
  Tensor expanded = src.expand(sizes());
  copy_kernel.get(device())(make_plan_memory_order({this, &expanded}, "copy_"));
  return *this;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone(MemoryFormat::contiguous);
}

Tensor Tensor::contiguous(MemoryFormat format) const {
  IGNIS_CHECK(format != MemoryFormat::preserve, ValueError,
              "[contiguous] memory format preserve is not supported; use contiguous or "
              "channels_last");
  IGNIS_CHECK(defined(), ValueError, "[contiguous] undefined tensor");
  check_memory_format(sizes(), format, "contiguous");
  if (is_contiguous(format)) return *this;
  return clone(format);
}

namespace {
/// A contiguous 1-D view of the elements of a non-overlapping, dense tensor, in memory order.
Tensor memory_of(const Tensor& t) {
  return make_view(t, {t.numel()}, {1}, t.storage_offset());
}

/// Copies x (already converted to out's dtype) into out on another device. A dense x laid
/// out like out moves as one block; anything else moves as a contiguous staging copy.
void transfer(const Tensor& out, const Tensor& x, bool non_blocking) {
  const auto kernel = transfer_kernel.get(out.is_cpu() ? x.device() : out.device());
  if (x.strides() == out.strides() && is_non_overlapping_and_dense(x.sizes(), x.strides()))
    return kernel(memory_of(out), memory_of(x), non_blocking);
  const Tensor staged = x.contiguous();
  if (out.is_contiguous()) return kernel(out, staged, non_blocking);
  const Tensor landing = make_tensor(out.sizes(), out.dtype(), out.device());
  kernel(landing, staged, false);
  Tensor(out).copy_(landing);
}

/// A copy of x into a new tensor of dtype t on device d laid out as format, recorded as an
/// identity (the engine casts the gradient back to x's dtype; the device move is undone
/// here).
Tensor recorded_copy(const Tensor& x, DType t, Device d, MemoryFormat format, const char* op,
                     bool non_blocking) {
  Tensor out = format == MemoryFormat::preserve
                   ? make_tensor_preserving(x, t, d)
                   : make_tensor_in_format(x.sizes(), t, d, format, op);
  {
    GradModeScope no_grad(false);
    if (d == x.device()) out.copy_(x);
    else if (x.numel() > 0) transfer(out, x.to(t), non_blocking);
  }
  if (needs_grad({&x})) {
    const Device back = x.device();
    record(op, {out}, {x}, {}, [back](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{g[0].to(back)};
    });
  }
  return out;
}
}  // namespace

Tensor Tensor::clone(MemoryFormat format) const {
  IGNIS_CHECK(defined(), ValueError, "[clone] undefined tensor");
  return recorded_copy(*this, dtype(), device(), format, "clone", false);
}

Tensor Tensor::to(DType t, bool copy, MemoryFormat format) const {
  return to(device(), t, false, copy, format);
}

Tensor Tensor::to(Device d, bool non_blocking, bool copy, MemoryFormat format) const {
  return to(d, dtype(), non_blocking, copy, format);
}

Tensor Tensor::to(MemoryFormat format, bool copy) const {
  return to(device(), dtype(), false, copy, format);
}

Tensor Tensor::to(Device d, DType t, bool non_blocking, bool copy, MemoryFormat format) const {
  IGNIS_CHECK(defined(), ValueError, "[to] undefined tensor");
  check_memory_format(sizes(), format, "to");
  // PyTorch's to_will_alias: the format asked for is the one the strides already suggest.
  const bool same_format = format == MemoryFormat::preserve || suggest_memory_format() == format;
  if (d == device() && t == dtype() && !copy && same_format) return *this;
  return recorded_copy(*this, t, d, format, "to", non_blocking);
}

namespace detail {
void fill_unchecked(const Tensor& t, const Scalar& value) {
  if (t.numel() > 0) fill_kernel.get(t.device())(make_plan_memory_order({&t}, "fill_"), value);
}
}  // namespace detail

Tensor& Tensor::fill_(const Scalar& value) {
  check_fill_value(value, dtype(), "fill_");
  if (needs_grad({this}))
    return inplace_with_autograd(*this, "fill", [&](const Tensor& before) {
      return full_like(before, value);
    });
  check_writable_layout(*this, "fill_");
  fill_unchecked(*this, value);
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

bool Tensor::is_pinned() const {
  const Allocator* pinned = pinned_allocator_if_built();
  return defined() && pinned && impl()->storage->allocator == pinned;
}

Tensor Tensor::pin_memory() const {
  IGNIS_CHECK(defined(), ValueError, "[pin_memory] undefined tensor");
  IGNIS_CHECK(is_cpu(), DeviceError, "[pin_memory] only CPU tensors can be pinned, got one on {}",
              device().str());
  if (is_pinned()) return *this;
  // cudaHostAlloc inside a capture would invalidate it with a bare CUDA error.
  refuse_during_capture("pin_memory", "allocates page-locked host memory");
  Allocator& pinned = pinned_allocator();
  const size_t nbytes = size_t(numel()) * itemsize(dtype());
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(nbytes ? pinned.allocate(nbytes) : nullptr, nbytes,
                                                Device::cpu(), nbytes ? &pinned : nullptr);
  impl->numel = numel();
  impl->sizes = sizes();
  impl->strides = contiguous_strides(sizes());
  impl->dtype = dtype();
  Tensor out(std::move(impl));
  GradModeScope no_grad(false);
  if (numel() > 0) out.copy_(*this);
  return out;
}

}  // namespace ignis
