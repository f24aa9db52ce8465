// Building the elementwise plan: strides per operand, dims of size 1 dropped, and adjacent
// dims merged where every operand steps through them as one (stride[d-1] == size[d]*stride[d]).
#include "core/iterator.h"

#include <algorithm>

#include "core/error.h"
#include "core/tensor_impl.h"

namespace ignis::detail {

namespace {
template <class Plan>
Plan build(const Tensor* const* ops, int n, const char* op, bool memory_order) {
  constexpr int kOps = Plan::kMaxOperands;
  Plan p;
  IGNIS_CHECK(n >= 1 && n <= kOps, ValueError, "[{}] elementwise plan with {} operands",
              op, n);
  const Shape& shape = ops[0]->sizes();
  IGNIS_CHECK(shape.size() <= 64, ShapeError,
              "[{}] tensors of more than 64 dimensions are not supported", op);
  p.noperands = n;
  p.device = ops[0]->device();
  p.numel = shape_numel(shape);
  for (int i = 0; i < n; ++i) {
    IGNIS_CHECK(ops[i]->sizes() == shape, ShapeError,
                "[{}] internal: operand {} has shape {}, expected {}", op, i,
                shape_str(ops[i]->sizes()), shape_str(shape));
    p.data[i] = static_cast<char*>(ops[i]->data_ptr());
    p.dtypes[i] = ops[i]->dtype();
  }
  // Collect non-trivial dims, outermost first: in logical order, or (memory_order) in the
  // order of the first operand's (the output's) strides, largest first, so that a permuted
  // output (channels-last, a transpose) is written in memory order and merges with inputs of
  // the same layout into one run. For a contiguous output both orders are the same.
  int64_t sizes[64];
  int64_t strides[kOps][64];
  int dims[64];
  int nd = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) dims[nd++] = int(d);
  const Shape& lead = ops[0]->strides();
  if (memory_order)
    std::stable_sort(dims, dims + nd, [&](int x, int y) { return lead[size_t(x)] > lead[size_t(y)]; });
  for (int k = 0; k < nd; ++k) {
    sizes[k] = shape[size_t(dims[k])];
    for (int i = 0; i < n; ++i) strides[i][k] = ops[i]->strides()[size_t(dims[k])];
  }
  // Merge dim d into d-1 when all operands allow it.
  int out = 0;
  for (int d = 0; d < nd; ++d) {
    if (out > 0) {
      bool mergeable = true;
      for (int i = 0; i < n; ++i)
        mergeable &= strides[i][out - 1] == sizes[d] * strides[i][d];
      if (mergeable) {
        sizes[out - 1] *= sizes[d];
        for (int i = 0; i < n; ++i) strides[i][out - 1] = strides[i][d];
        continue;
      }
    }
    sizes[out] = sizes[d];
    for (int i = 0; i < n; ++i) strides[i][out] = strides[i][d];
    ++out;
  }
  IGNIS_CHECK(out <= kMaxPlanDims, ShapeError,
              "[{}] tensors whose layout needs {} dimensions after merging are not supported "
              "(at most {}); call contiguous() first",
              op, out, kMaxPlanDims);
  p.ndim = out;
  bool contiguous = out <= 1;
  // The farthest element an operand reaches sums its dims' extents (a [2, 3e9]-strided view
  // of 1e9 columns spans 4e9 elements though no single dim does).
  int64_t max_offset = p.numel;
  int64_t span[kOps] = {};
  for (int d = 0; d < out; ++d) {
    p.sizes[d] = sizes[d];
    for (int i = 0; i < n; ++i) {
      p.strides[i][d] = strides[i][d];
      span[i] += (sizes[d] - 1) * std::abs(strides[i][d]);
    }
  }
  for (int i = 0; i < n; ++i) max_offset = std::max<int64_t>(max_offset, span[i] + 1);
  if (out == 1)
    for (int i = 0; i < n; ++i) contiguous &= p.strides[i][0] == 1;
  p.contiguous = contiguous;
  p.fits_int32 = max_offset < (int64_t(1) << 31);
  return p;
}
}  // namespace

ElementwisePlan make_plan(std::initializer_list<const Tensor*> operands, const char* op) {
  return build<ElementwisePlan>(operands.begin(), int(operands.size()), op, false);
}

ElementwisePlan make_plan_memory_order(std::initializer_list<const Tensor*> operands,
                                       const char* op) {
  return build<ElementwisePlan>(operands.begin(), int(operands.size()), op, true);
}

FusedPlan make_fused_plan(const std::vector<const Tensor*>& operands, const char* op) {
  return build<FusedPlan>(operands.data(), int(operands.size()), op, true);
}

ElementwisePlan make_plan(const std::vector<Tensor>& operands, const char* op) {
  const Tensor* ptrs[kMaxOperands];
  int n = 0;
  for (const Tensor& t : operands) {
    if (n < kMaxOperands) ptrs[n] = &t;
    ++n;
  }
  return build<ElementwisePlan>(ptrs, n, op, false);
}

}  // namespace ignis::detail
