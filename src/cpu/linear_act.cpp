// CPU kernels of the 2-D linear node (src/ops/linear_act_kernels.h). With ReLU: the forward
// runs the thin-product kernel with the bias and ReLU in its epilogue; the backward masks the
// output gradient and accumulates the bias gradient in one pass over it; the weight gradient
// formed from the mask in registers is src/cpu/relu_masked_weight.cpp. Without activation:
// the thin-product kernel with the bias in its epilogue, or the bias copied into the rows and
// one BLAS call accumulating onto it; the backward is two BLAS calls and a column sum. The
// BLAS calls go through the CPU gemm kernel itself (src/cpu/blas.cpp: operand layouts,
// packing), not the mm/addmm front ends, whose checks and temporaries cost as much as a small
// layer's arithmetic.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/allocator.h"
#include "cpu/cpu_features.h"
#include "cpu/relu_masked_weight.h"
#include "cpu/small_gemm.h"
#include "ops/linalg_kernels.h"
#include "ops/linear_act_kernels.h"

namespace ignis::cpu {
namespace {

/// relu(x w^T + b), or x w^T + b without `relu`, through the thin-product kernel; false
/// when the product is not thin or not float32.
bool small_linear_forward(const detail::LinearForward& a, bool relu) {
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
  g.relu = relu;
  const size_t bytes = size_t(plan.pack_elems) * sizeof(float);
  void* scratch = bytes ? detail::cpu_allocator().allocate(bytes) : nullptr;
  run_small_sgemm(plan, g, a.w_rs, static_cast<float*>(scratch));
  if (scratch) detail::cpu_allocator().deallocate(scratch, bytes);
  return true;
}

bool linear_relu_forward(const detail::LinearForward& a) { return small_linear_forward(a, true); }

/// C (rows x cols, contiguous) = a @ b (+ C when accumulate) through the CPU gemm kernel, for
/// a (rows x inner) and b (inner x cols) given by their strides.
void cpu_gemm(DType dtype, int64_t rows, int64_t cols, int64_t inner, const void* a, int64_t a_rs,
              int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, void* c, bool accumulate) {
  detail::GemmArgs g;
  g.dtype = dtype;
  g.m = rows, g.n = cols, g.k = inner;
  g.a.data = const_cast<void*>(a), g.a.row_stride = a_rs, g.a.col_stride = a_cs;
  g.b.data = const_cast<void*>(b), g.b.row_stride = b_rs, g.b.col_stride = b_cs;
  g.c.data = c, g.c.row_stride = cols, g.c.col_stride = 1;
  g.beta = accumulate ? 1 : 0;
  g.device = Device(DeviceType::CPU);
  detail::gemm_kernel.get(g.device)(g);
}

bool is_blas_float(DType dtype) { return dtype == kFloat32 || dtype == kFloat64; }

/// x w^T + b: the thin-product kernel, or each row of out set to the bias and the product
/// accumulated onto it by one GEMM (as addmm does, without broadcasting the bias through a
/// strided copy).
bool linear_forward(const detail::LinearForward& a) {
  if (small_linear_forward(a, false)) return true;
  if (!is_blas_float(a.dtype)) return false;
  const size_t row_bytes = size_t(a.n) * itemsize(a.dtype);
  if (a.bias)
    for (int64_t i = 0; i < a.m; ++i)
      std::memcpy(static_cast<char*>(a.out) + size_t(i) * row_bytes, a.bias, row_bytes);
  // B = w^T: w's strides swapped.
  cpu_gemm(a.dtype, a.m, a.n, a.k, a.x, a.x_rs, a.x_cs, a.w, a.w_cs, a.w_rs, a.out,
           a.bias != nullptr);
  return true;
}

/// Column sums of g (m x n, contiguous) into out, accumulated in double down each block of
/// up to 64 columns (the inner loop runs along a row and vectorises).
template <class T>
void column_sums(const T* g, int64_t m, int64_t n, T* out) {
  constexpr int64_t kBlock = 64;
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t width = std::min(kBlock, n - j0);
    double sums[kBlock] = {};
    for (int64_t i = 0; i < m; ++i) {
      const T* row = g + i * n + j0;
      for (int64_t j = 0; j < width; ++j) sums[j] += double(row[j]);
    }
    for (int64_t j = 0; j < width; ++j) out[j0 + j] = T(sums[j]);
  }
}

bool linear_backward(const detail::LinearBackward& a) {
  if (!is_blas_float(a.dtype)) return false;
  // dx = g (m x n) @ w (n x k); dw = g^T (n x m) @ x (m x k).
  if (a.dx) cpu_gemm(a.dtype, a.m, a.k, a.n, a.g, a.n, 1, a.w, a.w_rs, a.w_cs, a.dx, false);
  if (a.dw) cpu_gemm(a.dtype, a.n, a.k, a.m, a.g, 1, a.n, a.x, a.x_rs, a.x_cs, a.dw, false);
  if (a.dbias) {
    if (a.dtype == kFloat32)
      column_sums(static_cast<const float*>(a.g), a.m, a.n, static_cast<float*>(a.dbias));
    else
      column_sums(static_cast<const double*>(a.g), a.m, a.n, static_cast<double*>(a.dbias));
  }
  return true;
}

IGNIS_AVX2_BEGIN
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
IGNIS_AVX2_END

bool relu_mask_backward(const detail::ReluMaskBackward& a) {
  if (a.dtype != kFloat32 || !cpu_has_avx2()) return false;
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
  detail::linear_forward_kernel.set(DeviceType::CPU, &linear_forward);
  detail::linear_backward_kernel.set(DeviceType::CPU, &linear_backward);
  detail::relu_mask_backward_kernel.set(DeviceType::CPU, &relu_mask_backward);
  detail::relu_mask_weight_grad_kernel.set(DeviceType::CPU, &relu_mask_weight_grad);
}

}  // namespace ignis::cpu
