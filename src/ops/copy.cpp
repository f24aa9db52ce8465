// Copies and conversions: copy_, contiguous, clone, to(dtype), to(device), fill_, zero_.
#include "autograd/record.h"
#include "core/dispatch.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
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
  return clone();
}

namespace {
/// A copy of x into a new tensor of dtype t on device d, recorded as an identity (the engine
/// casts the gradient back to x's dtype; the device move is undone here).
Tensor recorded_copy(const Tensor& x, DType t, Device d, const char* op, bool non_blocking) {
  Tensor out = make_tensor(x.sizes(), t, d);
  {
    GradModeScope no_grad(false);
    if (d == x.device()) out.copy_(x);
    else if (x.numel() > 0)
      transfer_kernel.get(d.is_cpu() ? x.device() : d)(out, x.to(t).contiguous(), non_blocking);
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

Tensor Tensor::clone() const { return recorded_copy(*this, dtype(), device(), "clone", false); }

Tensor Tensor::to(DType t, bool copy) const {
  if (t == dtype() && !copy) return *this;
  return recorded_copy(*this, t, device(), "to", false);
}

Tensor Tensor::to(Device d, bool non_blocking, bool copy) const {
  return to(d, dtype(), non_blocking, copy);
}

Tensor Tensor::to(Device d, DType t, bool non_blocking, bool copy) const {
  if (d == device() && t == dtype() && !copy) return *this;
  return recorded_copy(*this, t, d, "to", non_blocking);
}

Tensor& Tensor::fill_(const Scalar& value) {
  if (needs_grad({this}))
    return inplace_with_autograd(*this, "fill", [&](const Tensor& before) {
      return full_like(before, value);
    });
  check_writable_layout(*this, "fill_");
  if (numel() == 0) return *this;
  fill_kernel.get(device())(make_plan_memory_order({this}, "fill_"), value);
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace ignis
