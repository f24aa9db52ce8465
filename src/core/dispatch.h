// Kernel tables: how device-independent op code reaches a backend without #ifdef.
// A KernelSlot holds one function pointer per device type; backends fill slots in their
// register_*() functions (src/cpu/register.cpp, src/cuda/register.cu), which run once, on
// the first dispatch. Elementwise families use arrays indexed by their op enum instead.
#pragma once

#include "core/error.h"
#include "core/iterator.h"
#include "kernels/binary_ops.h"
#include "kernels/unary_ops.h"

namespace ignis::detail {

/// Runs every backend's registration once (thread-safe); called by KernelSlot::get.
void ensure_kernels_registered();

/// visit_dtype (include/ignis/dtype.h) for a kernel that takes floating dtypes only: `f` is
/// instantiated for those four; any other dtype is a DTypeError naming `op`.
template <class F>
decltype(auto) visit_floating_dtype(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float16: return f.template operator()<Half>();
    default: break;
  }
  throw DTypeError(fmt::format("[{}] expected floating tensors, got {}", op, dtype_name(t)));
}

template <class Fn>
struct KernelSlot {
  const char* name;
  Fn fn[kNumDeviceTypes] = {};

  /// The kernel for device; throws NotImplementedError("[name] not implemented for cuda").
  Fn get(Device device) const {
    ensure_kernels_registered();
    Fn f = fn[int(device.type)];
    IGNIS_CHECK(f != nullptr, NotImplementedError, "[{}] not implemented for {}", name,
                device_type_name(device.type));
    return f;
  }
  bool has(DeviceType type) const {
    ensure_kernels_registered();
    return fn[int(type)] != nullptr;
  }
  void set(DeviceType type, Fn f) { fn[int(type)] = f; }
};

// ---- elementwise families (tables indexed by op) -------------------------------------------
// plan operands: [out, in] / [out, a, b] / [out, cond, a, b]. compute = dtype of the inputs.
using UnaryKernelFn = void (*)(const ElementwisePlan&, DType compute,
                               const kernels::UnaryParams&);
using BinaryKernelFn = void (*)(const ElementwisePlan&, DType compute,
                                const kernels::BinaryParams&);
inline UnaryKernelFn unary_kernels[kNumDeviceTypes][kernels::kNumUnaryOps] = {};
inline BinaryKernelFn binary_kernels[kNumDeviceTypes][kernels::kNumBinaryOps] = {};

/// Converting copy: plan [dst, src], each with its own dtype (plan.dtypes).
inline KernelSlot<void (*)(const ElementwisePlan&)> copy_kernel{"copy"};
/// Fill: plan [out]; value already converted to the out dtype and stored in 8 bytes.
inline KernelSlot<void (*)(const ElementwisePlan&, const Scalar&)> fill_kernel{"fill"};
/// where: plan [out, cond(bool), a, b]; a, b and out share the dtype.
inline KernelSlot<void (*)(const ElementwisePlan&)> where_kernel{"where"};

}  // namespace ignis::detail

namespace ignis::detail {
/// Copy between devices of contiguous tensors of the same dtype and size (registered by the
/// CUDA backend). Direction follows the tensors' devices.
inline KernelSlot<void (*)(const Tensor& dst, const Tensor& src, bool non_blocking)>
    transfer_kernel{"to(device)"};
}  // namespace ignis::detail

namespace ignis::detail {
/// out[i] = start + i * step for the contiguous 1-D out (arange), or PyTorch's symmetric
/// linspace formula when `linspace_end` is set (values computed from both ends).
inline KernelSlot<void (*)(const Tensor& out, double start, double step,
                           std::optional<double> linspace_end)>
    range_kernel{"arange"};
}  // namespace ignis::detail
