// softmax, log_softmax and cumsum: ops along one dim. The front end makes the input contiguous
// (a no-op in the common case), views it as (outer, dim, inner) and calls one kernel.
#include "amp/autocast_policy.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "autograd/record.h"
#include "ops/reduce_grad.h"
#include "ops/reduce_kernels.h"

namespace ignis {

using namespace detail;

namespace {

struct AlongDim {
  int64_t outer = 1, dim = 1, inner = 1;
};

/// x's sizes split around dim d (already wrapped); a 0-dim tensor is one element.
AlongDim split_at(const Tensor& x, int64_t d) {
  AlongDim s;
  for (int64_t i = 0; i < x.dim(); ++i) {
    const int64_t n = x.sizes()[size_t(i)];
    if (i < d) s.outer *= n;
    else if (i == d) s.dim = n;
    else s.inner *= n;
  }
  return s;
}

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log, const char* op) {
  IGNIS_CHECK(x.defined(), ValueError, "[{}] undefined tensor", op);
  if (autocast_pending()) {  // float32 under autocast; Note [Autocast applies once]
    AutocastApplied once;
    return softmax_impl(autocast_fp32(x), dim, log, op);
  }
  const int64_t d = wrap_dim(dim, x.dim(), op);
  // Integer and bool inputs become the default float dtype (ops.h).
  const Tensor in = (is_floating(x.dtype()) ? x : x.to(default_dtype())).contiguous();
  Tensor out = make_tensor(in.sizes(), in.dtype(), in.device());
  if (out.numel() == 0) {  // no values, but a node: an empty batch still backpropagates
    if (needs_grad({&in})) record_softmax(log, in, out, d);
    return out;
  }
  IGNIS_CHECK(softmax_kernel.has(in.device().type), NotImplementedError,
              "[{}] not implemented for {}", op, device_type_name(in.device().type));
  const AlongDim s = split_at(in, d);
  SoftmaxArgs args;
  args.in = static_cast<const char*>(in.data_ptr());
  args.out = static_cast<char*>(out.data_ptr());
  args.dtype = in.dtype();
  args.outer = s.outer;
  args.dim = s.dim;
  args.inner = s.inner;
  args.log = log;
  args.device = in.device();
  softmax_kernel.get(in.device())(args);
  if (needs_grad({&in})) record_softmax(log, in, out, d);
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false, "softmax"); }

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_impl(x, dim, true, "log_softmax");
}

Tensor cumsum(const Tensor& x, int64_t dim) {
  IGNIS_CHECK(x.defined(), ValueError, "[cumsum] undefined tensor");
  if (autocast_pending()) {  // float32 under autocast; Note [Autocast applies once]
    AutocastApplied once;
    return cumsum(autocast_fp32(x), dim);
  }
  const int64_t d = wrap_dim(dim, x.dim(), "cumsum");
  const Tensor in = x.contiguous();
  // Integers and bool accumulate in int64, as PyTorch's cumsum.
  Tensor out = make_tensor(in.sizes(), is_floating(in.dtype()) ? in.dtype() : kInt64, in.device());
  if (out.numel() == 0) {  // no values, but a node: an empty batch still backpropagates
    if (needs_grad({&in})) record_cumsum(in, out, d);
    return out;
  }
  IGNIS_CHECK(cumsum_kernel.has(in.device().type), NotImplementedError,
              "[cumsum] not implemented for {}", device_type_name(in.device().type));
  const AlongDim s = split_at(in, d);
  CumsumArgs args;
  args.in = static_cast<const char*>(in.data_ptr());
  args.out = static_cast<char*>(out.data_ptr());
  args.in_dtype = in.dtype();
  args.out_dtype = out.dtype();
  args.outer = s.outer;
  args.dim = s.dim;
  args.inner = s.inner;
  args.device = in.device();
  cumsum_kernel.get(in.device())(args);
  if (needs_grad({&in})) record_cumsum(in, out, d);
  return out;
}

}  // namespace ignis
