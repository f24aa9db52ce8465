// CPU kernels of the linear + ReLU fusion (src/ops/linear_act_kernels.h): the forward runs the
// thin-product kernel with the bias and ReLU in its epilogue; the backward masks the output
// gradient and accumulates the bias gradient in one pass over it.
#include <immintrin.h>

#include "core/allocator.h"
#include "cpu/small_gemm.h"
#include "ops/linear_act_kernels.h"

namespace ignis::cpu {
namespace {

bool linear_relu_forward(const detail::LinearReluForward& a) {
  if (a.dtype != kFloat32) return false;
  // x @ w^T: B = w^T has row stride 1 and column stride k.
  const SmallGemmPlan plan = plan_small_sgemm(a.m, a.n, a.k, a.k, a.k);
  if (!plan.use) return false;
  SmallGemm g;
  g.m = a.m, g.n = a.n, g.k = a.k;
  g.a = static_cast<const float*>(a.x), g.a_rs = a.k, g.a_cs = 1;
  g.b = static_cast<const float*>(a.w), g.b_rs = 1;
  g.c = static_cast<float*>(a.out), g.c_rs = a.n, g.c_cs = 1;
  g.col_bias = static_cast<const float*>(a.bias);
  g.relu = true;
  const size_t bytes = size_t(plan.pack_elems) * sizeof(float);
  void* scratch = bytes ? detail::cpu_allocator().allocate(bytes) : nullptr;
  run_small_sgemm(plan, g, a.k, static_cast<float*>(scratch));
  if (scratch) detail::cpu_allocator().deallocate(scratch, bytes);
  return true;
}

/// dz and the column sums of dz over a block of `width` (<= 64) columns starting at j0: the
/// sums stay in registers while the rows pass.
void relu_mask_block(
    const float* g, const float* y, float* dz, float* db, int64_t m, int64_t n, int64_t j0) {
  constexpr int kVecs = 8;
  const __m256 zero = _mm256_setzero_ps();
  __m256 sum[kVecs];
  for (int v = 0; v < kVecs; ++v) sum[v] = zero;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t at = i * n + j0;
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const __m256 keep = _mm256_cmp_ps(_mm256_loadu_ps(y + at + 8 * v), zero, _CMP_GT_OQ);
      const __m256 d = _mm256_and_ps(_mm256_loadu_ps(g + at + 8 * v), keep);
      _mm256_storeu_ps(dz + at + 8 * v, d);
      sum[v] = _mm256_add_ps(sum[v], d);
    }
  }
  if (db)
    for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(db + j0 + 8 * v, sum[v]);
}

bool relu_mask_backward(const detail::ReluMaskBackward& a) {
  if (a.dtype != kFloat32) return false;
  const auto* g = static_cast<const float*>(a.g);
  const auto* y = static_cast<const float*>(a.y);
  auto* dz = static_cast<float*>(a.dz);
  auto* db = static_cast<float*>(a.dbias);
  const int64_t m = a.m, n = a.n, blocked = n / 64 * 64;
  for (int64_t j0 = 0; j0 < blocked; j0 += 64) relu_mask_block(g, y, dz, db, m, n, j0);
  if (blocked == n) return true;
  // The last n % 64 columns, element by element (summed over rows in order, as the blocks).
  if (db)
    for (int64_t j = blocked; j < n; ++j) db[j] = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = blocked; j < n; ++j) {
      const int64_t at = i * n + j;
      dz[at] = y[at] > 0 ? g[at] : 0.0f;
      if (db) db[j] += dz[at];
    }
  return true;
}

}  // namespace

void register_linear_act_cpu() {
  detail::linear_relu_forward_kernel.set(DeviceType::CPU, &linear_relu_forward);
  detail::relu_mask_backward_kernel.set(DeviceType::CPU, &relu_mask_backward);
}

}  // namespace ignis::cpu
