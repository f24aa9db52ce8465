// The reductions family's kernel slots and their arguments: the ReducePlan (the input seen as
// kept dims x reduced dims, built once by the front end), and the softmax / cumsum arguments.
// Backends fill the slots in register_reduce_cpu() / register_softmax_cpu().
#pragma once

#include <cstdint>

#include "core/dispatch.h"

namespace ignis::detail {

/// Which reduction a ReduceArgs asks for. Arg* write int64 indices (and values when the plan has
/// an output for them); Mean/Var/Std/Norm*/LogSumExp take floating inputs only.
enum class ReduceOp : uint8_t {
  Sum, Mean, Prod, Max, Min, ArgMax, ArgMin, Var, Std,
  NormL1, NormL2, NormInf, NormNegInf, NormL0, NormP, All, Any, LogSumExp
};

// Note [Reduce plan]
// The input is viewed as (kept dims..., reduced dims...). Dims of size 1 are dropped, adjacent
// dims that step through memory as one are merged, and (unless the op returns indices, whose
// meaning depends on the logical order) the reduced dims are sorted by decreasing stride, and
// the kept dims too, so the innermost dim of each group has the smallest stride. Kernels pick a
// path from the innermost strides: reduced stride 1 -> "inner" (each output reads contiguous
// runs), kept stride 1 -> "outer" (vectorise across outputs), otherwise a strided loop.
// There is always at least one dim in each group (size 1, stride 0 when there was none), so
// kernels need not special-case whole-tensor reductions or reductions over nothing.
struct ReducePlan {
  int nkept = 0;
  int nred = 0;
  int64_t kept_sizes[kMaxPlanDims] = {};
  int64_t kept_strides[kMaxPlanDims] = {};  // input strides, in elements
  int64_t out_strides[kMaxPlanDims] = {};   // output (and indices) strides, in elements
  int64_t red_sizes[kMaxPlanDims] = {};
  int64_t red_strides[kMaxPlanDims] = {};
  int64_t num_outputs = 1;
  int64_t num_reduced = 1;
  const char* in = nullptr;
  char* out = nullptr;      // may be null for ArgMax/ArgMin (indices only)
  char* indices = nullptr;  // int64, laid out as out; only for ArgMax/ArgMin
  DType in_dtype = kFloat32;
  DType out_dtype = kFloat32;
  Device device;  // of in, out and indices
};

struct ReduceArgs {
  ReducePlan plan;
  ReduceOp op = ReduceOp::Sum;
  double p = 2;           // order of NormP
  double correction = 1;  // Var / Std: divide by max(0, n - correction)
};

/// Builds the plan reducing the dims set in mask of `in` into `out` (contiguous, of the
/// keepdim shape: in's sizes with 1 in every reduced dim). indices, when given, has out's
/// shape. keep_order keeps the reduced dims in logical order (index-returning ops).
ReducePlan make_reduce_plan(const Tensor& in, uint64_t mask, const Tensor* out,
                            const Tensor* indices, bool keep_order, const char* op);

/// Every value and index reduction (see ReduceOp). Inputs/outputs as described by the plan:
/// out dtype is the input dtype, or int64 for Sum/Prod of integers and bool, or bool for
/// All/Any. Must not throw once it has started writing.
inline KernelSlot<void (*)(const ReduceArgs&)> reduce_kernel{"reduce"};

/// softmax / log_softmax of a contiguous floating tensor viewed as (outer, dim, inner), into a
/// contiguous out of the same shape and dtype.
struct SoftmaxArgs {
  const char* in = nullptr;
  char* out = nullptr;
  DType dtype = kFloat32;
  int64_t outer = 1, dim = 1, inner = 1;
  bool log = false;
  Device device;
  /// When set (CPU, contiguous rows only: inner == 1), row r's log-sum-exp, max + log(sum of
  /// exp(x - max)), goes to lse[r]: the CPU's fused cross-entropy reads its losses from it.
  double* lse = nullptr;
};
inline KernelSlot<void (*)(const SoftmaxArgs&)> softmax_kernel{"softmax"};

/// Cumulative sum of a contiguous tensor viewed as (outer, dim, inner) into a contiguous out of
/// the same shape: out dtype equals in dtype for floats, int64 for integers and bool.
struct CumsumArgs {
  const char* in = nullptr;
  char* out = nullptr;
  DType in_dtype = kFloat32, out_dtype = kFloat32;
  int64_t outer = 1, dim = 1, inner = 1;
  Device device;  ///< where in and out live: the device a CUDA kernel launches on
};
inline KernelSlot<void (*)(const CumsumArgs&)> cumsum_kernel{"cumsum"};

}  // namespace ignis::detail
