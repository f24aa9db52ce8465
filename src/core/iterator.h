// The elementwise plan (a small TensorIterator): operands of one broadcast shape, their
// element strides, coalesced dimensions. It is a plain struct so the CUDA launch can pass it
// by value. Front ends build it with make_plan(); kernels only read it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::detail {

inline constexpr int kMaxPlanDims = 16;  // after coalescing; more is rejected with an error
inline constexpr int kMaxOperands = 4;   // output first, then up to three inputs
/// Operands of a fused elementwise program's plan (src/ops/fuse.cpp): its outputs, then its
/// inputs. Only the CPU walks plans this wide, so the common plan stays small for CUDA.
inline constexpr int kMaxFusedOperands = 32;

template <int MaxOperands>
struct BasicElementwisePlan {
  static constexpr int kMaxOperands = MaxOperands;
  int ndim = 0;       // dims after coalescing, innermost last; 0 means a single element
  int noperands = 0;  // data[0] is the output (a fused plan: its outputs come first)
  int64_t numel = 0;
  int64_t sizes[kMaxPlanDims] = {};
  int64_t strides[kMaxOperands][kMaxPlanDims] = {};  // in elements of each operand's dtype
  char* data[kMaxOperands] = {};
  DType dtypes[kMaxOperands] = {};
  /// Every operand is contiguous (stride 1 over one dim), so kernels may use a flat loop.
  bool contiguous = false;
  /// Every offset fits in int32, so CUDA kernels may use 32-bit index math.
  bool fits_int32 = true;
  /// The operands' device (the front ends check that they share one): where a CUDA
  /// kernel launches.
  Device device;
};
using ElementwisePlan = BasicElementwisePlan<kMaxOperands>;
using FusedPlan = BasicElementwisePlan<kMaxFusedOperands>;

/// Builds the plan over operands that already share one shape (inputs expanded with zero
/// strides; Note [Broadcast strides are zero]). operands[0] is the output.
ElementwisePlan make_plan(std::initializer_list<const Tensor*> operands, const char* op);
ElementwisePlan make_plan(const std::vector<Tensor>& operands, const char* op);
/// The same, walking the dims in the output's memory order (largest stride first) rather
/// than the logical order: for ops whose result does not depend on the visiting order
/// (elementwise math, copy, fill), so permuted layouts run as contiguous runs.
ElementwisePlan make_plan_memory_order(std::initializer_list<const Tensor*> operands,
                                       const char* op);
/// make_plan_memory_order for up to kMaxFusedOperands operands (the first one leads).
FusedPlan make_fused_plan(const std::vector<const Tensor*>& operands, const char* op);

}  // namespace ignis::detail
