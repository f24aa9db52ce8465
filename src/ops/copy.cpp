// Copies and conversions: copy_, contiguous, clone, to(dtype), to(device), fill_, zero_.
#include "core/dispatch.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/write_checks.h"

namespace ignis {

using namespace detail;

Tensor& Tensor::copy_(const Tensor& src_in) {
  IGNIS_CHECK(defined() && src_in.defined(), ValueError, "[copy_] undefined tensor");
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
  copy_kernel.get(device())(make_plan({this, &expanded}, "copy_"));
  return *this;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = make_tensor(sizes(), dtype(), device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType t, bool copy) const {
  if (t == dtype() && !copy) return *this;
  Tensor out = make_tensor(sizes(), t, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device d, bool non_blocking, bool copy) const {
  return to(d, dtype(), non_blocking, copy);
}

Tensor Tensor::to(Device d, DType t, bool non_blocking, bool copy) const {
  if (d == device() && t == dtype() && !copy) return *this;
  if (d == device()) return to(t, true);
  Tensor staged = to(t).contiguous();
  Tensor out = make_tensor(sizes(), t, d);
  if (numel() > 0) transfer_kernel.get(d.is_cpu() ? device() : d)(out, staged, non_blocking);
  return out;
}

Tensor& Tensor::fill_(const Scalar& value) {
  check_writable_layout(*this, "fill_");
  if (numel() == 0) return *this;
  fill_kernel.get(device())(make_plan({this}, "fill_"), value);
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace ignis
