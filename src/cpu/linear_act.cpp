// CPU kernels of the linear + ReLU fusion (src/ops/linear_act_kernels.h): the forward runs the
// thin-product kernel with the bias and ReLU in its epilogue; the backward masks the output
// gradient and accumulates the bias gradient in one pass over it; the weight gradient formed
// from the mask in registers is src/cpu/relu_masked_weight.cpp.
#include <immintrin.h>

#include "core/allocator.h"
#include "cpu/relu_masked_weight.h"
#include "cpu/small_gemm.h"
#include "ops/linear_act_kernels.h"

namespace ignis::cpu {
namespace {

bool linear_relu_forward(const detail::LinearReluForward& a) {
  if (a.dtype != kFloat32) return false;
  // x @ w^T: B = w^T has w's strides swapped.
  const SmallGemmPlan plan = plan_small_sgemm(a.m, a.n, a.k, a.x_rs, a.w_rs);
  if (!plan.use) return false;
  SmallGemm g;
  g.m = a.m, g.n = a.n, g.k = a.k;
  g.a = static_cast<const float*>(a.x), g.a_rs = a.x_rs, g.a_cs = a.x_cs;
  g.b = static_cast<const float*>(a.w), g.b_rs = a.w_cs;
  g.c = static_cast<float*>(a.out), g.c_rs = a.n, g.c_cs = 1;
  g.col_bias = static_cast<const float*>(a.bias);
  g.relu = true;
  const size_t bytes = size_t(plan.pack_elems) * sizeof(float);
  void* scratch = bytes ? detail::cpu_allocator().allocate(bytes) : nullptr;
  run_small_sgemm(plan, g, a.w_rs, static_cast<float*>(scratch));
  if (scratch) detail::cpu_allocator().deallocate(scratch, bytes);
  return true;
}

/// The masked gradient of rows [i0, i0 + R) (all n columns), their column sums added to db
/// (if any). Rows are walked in order, R at a time, so that every stream is sequential and db
/// is read and written once per R rows.
template <int R>
void relu_mask_rows(const float* g, const float* y, float* dz, float* db, int64_t n, int64_t i0) {
  const __m256 zero = _mm256_setzero_ps();
  const int64_t vec_end = n / 8 * 8;
  int64_t j = 0;
  for (; j < vec_end; j += 8) {
    __m256 sum = zero;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int64_t at = (i0 + r) * n + j;
      const __m256 keep = _mm256_cmp_ps(_mm256_loadu_ps(y + at), zero, _CMP_GT_OQ);
      const __m256 d = _mm256_and_ps(_mm256_loadu_ps(g + at), keep);
      _mm256_storeu_ps(dz + at, d);
      sum = _mm256_add_ps(sum, d);
    }
    if (db) _mm256_storeu_ps(db + j, _mm256_add_ps(_mm256_loadu_ps(db + j), sum));
  }
  for (; j < n; ++j)
    for (int r = 0; r < R; ++r) {
      const int64_t at = (i0 + r) * n + j;
      dz[at] = y[at] > 0 ? g[at] : 0.0f;
      if (db) db[j] += dz[at];
    }
}

bool relu_mask_backward(const detail::ReluMaskBackward& a) {
  if (a.dtype != kFloat32) return false;
  const auto* g = static_cast<const float*>(a.g);
  const auto* y = static_cast<const float*>(a.y);
  auto* dz = static_cast<float*>(a.dz);
  auto* db = static_cast<float*>(a.dbias);
  const int64_t m = a.m, n = a.n;
  if (db)
    for (int64_t j = 0; j < n; ++j) db[j] = 0;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) relu_mask_rows<4>(g, y, dz, db, n, i);
  for (; i < m; ++i) relu_mask_rows<1>(g, y, dz, db, n, i);
  return true;
}

}  // namespace

void register_linear_act_cpu() {
  detail::linear_relu_forward_kernel.set(DeviceType::CPU, &linear_relu_forward);
  detail::relu_mask_backward_kernel.set(DeviceType::CPU, &relu_mask_backward);
  detail::relu_mask_weight_grad_kernel.set(DeviceType::CPU, &relu_mask_weight_grad);
}

}  // namespace ignis::cpu
