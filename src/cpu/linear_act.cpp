// CPU kernels of the linear + ReLU fusion (src/ops/linear_act_kernels.h): the forward runs the
// thin-product kernel with the bias and ReLU in its epilogue; the backward masks the output
// gradient and accumulates the bias gradient in one pass over it, or forms the weight
// gradient from the masked gradient in registers when the layer's input needs no gradient.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "core/allocator.h"
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

// The weight gradient of an MLP's first layer, dw = (g * (y > 0))^T x with k a few features,
// is a product OpenBLAS runs at ~80 GFLOP/s after a separate pass that writes the masked
// gradient (n x m floats) only for the product to read it back. Here sixteen hidden units at
// a time walk the rows once per pass: the mask is applied in registers and each of up to
// kFeaturesPerPass features keeps an accumulator per 8 units, so the masked gradient is never
// stored, and each broadcast feature value feeds two FMAs (one load per FMA would make the
// loads, not the FMAs, the limit).
constexpr int kFeaturesPerPass = 5;  // 2 x 5 accumulators + masks and sums: 15 of 16 registers
/// Above these the product leaves the caches this kernel relies on; BLAS blocks for them.
constexpr int64_t kMaxMaskedWeightFeatures = 48;
constexpr int64_t kMaxMaskedWeightElems = int64_t(1) << 17;  // m * n of g (and of y)

/// Features [p0, p0 + P) of hidden units [j, j + 8 * Blocks), P = sizeof...(Q): dw rows
/// j..j+8*Blocks-1 at those columns and, with Bias, db over the same units (the first pass
/// only). The accumulators are only ever indexed by the constants Q, so that the compiler
/// keeps every one in a register (a loop over p left them in memory, stored on every row).
template <int Blocks, bool Bias, size_t... Q>
void masked_weight_block(const detail::ReluMaskWeightGrad& a, int64_t j, int64_t p0,
                         std::index_sequence<Q...>) {
  static_assert(Blocks == 1 || Blocks == 2);
  constexpr size_t P = sizeof...(Q);
  const float* g = static_cast<const float*>(a.g) + j;
  const float* y = static_cast<const float*>(a.y) + j;
  const float* x = static_cast<const float*>(a.x) + p0 * a.x_cs;
  const int64_t n = a.n, x_rs = a.x_rs, x_cs = a.x_cs;
  const __m256 zero = _mm256_setzero_ps();
  __m256 acc0[P], acc1[P];
  ((acc0[Q] = zero), ...);
  ((acc1[Q] = zero), ...);
  __m256 bias0 = zero, bias1 = zero;
  for (int64_t i = 0; i < a.m; ++i) {
    const float* xi = x + i * x_rs;
    const __m256 d0 = _mm256_and_ps(_mm256_loadu_ps(g + i * n),
                                    _mm256_cmp_ps(_mm256_loadu_ps(y + i * n), zero, _CMP_GT_OQ));
    if constexpr (Bias) bias0 = _mm256_add_ps(bias0, d0);
    if constexpr (Blocks == 1) {
      ((acc0[Q] = _mm256_fmadd_ps(d0, _mm256_broadcast_ss(xi + int64_t(Q) * x_cs), acc0[Q])), ...);
    } else {
      const __m256 d1 = _mm256_and_ps(
          _mm256_loadu_ps(g + i * n + 8),
          _mm256_cmp_ps(_mm256_loadu_ps(y + i * n + 8), zero, _CMP_GT_OQ));
      if constexpr (Bias) bias1 = _mm256_add_ps(bias1, d1);
      const auto both = [&](auto q) {
        const __m256 v = _mm256_broadcast_ss(xi + int64_t(q()) * x_cs);
        acc0[q()] = _mm256_fmadd_ps(d0, v, acc0[q()]);
        acc1[q()] = _mm256_fmadd_ps(d1, v, acc1[q()]);
      };
      (both(std::integral_constant<size_t, Q>()), ...);
    }
  }
  // acc0/acc1[p] hold column p0 + p of dw's rows j.. (8 each): written out transposed.
  // (Stored with constant indices only: a pointer to acc0 or acc1 would put them in memory.)
  alignas(32) float columns[Blocks][P][8];
  (_mm256_store_ps(columns[0][Q], acc0[Q]), ...);
  if constexpr (Blocks == 2) (_mm256_store_ps(columns[Blocks - 1][Q], acc1[Q]), ...);
  auto* dw = static_cast<float*>(a.dw);
  for (int r = 0; r < Blocks * 8; ++r)
    for (size_t p = 0; p < P; ++p) dw[(j + r) * a.k + p0 + int64_t(p)] = columns[r / 8][p][r % 8];
  if constexpr (Bias) {
    auto* db = static_cast<float*>(a.dbias) + j;
    _mm256_storeu_ps(db, bias0);
    if constexpr (Blocks == 2) _mm256_storeu_ps(db + 8, bias1);
  }
}

using MaskedWeightBlock = void (*)(const detail::ReluMaskWeightGrad&, int64_t, int64_t);

template <int Blocks, bool Bias, int P>
void masked_weight_block(const detail::ReluMaskWeightGrad& a, int64_t j, int64_t p0) {
  masked_weight_block<Blocks, Bias>(a, j, p0, std::make_index_sequence<P>());
}
template <int Blocks, bool Bias, size_t... P>
constexpr std::array<MaskedWeightBlock, sizeof...(P)> masked_weight_blocks(
    std::index_sequence<P...>) {
  return {&masked_weight_block<Blocks, Bias, int(P) + 1>...};
}
/// [Blocks - 1][Bias][P - 1]: the block kernel for 8 * Blocks units and P features in a pass.
constexpr std::array<std::array<std::array<MaskedWeightBlock, kFeaturesPerPass>, 2>, 2>
    kMaskedWeightBlocks = {{
        {masked_weight_blocks<1, false>(std::make_index_sequence<kFeaturesPerPass>()),
         masked_weight_blocks<1, true>(std::make_index_sequence<kFeaturesPerPass>())},
        {masked_weight_blocks<2, false>(std::make_index_sequence<kFeaturesPerPass>()),
         masked_weight_blocks<2, true>(std::make_index_sequence<kFeaturesPerPass>())},
    }};

bool relu_mask_weight_grad(const detail::ReluMaskWeightGrad& a) {
  if (a.dtype != kFloat32 || a.k > kMaxMaskedWeightFeatures || a.m * a.n > kMaxMaskedWeightElems)
    return false;
  const int64_t vec_end = a.n / 8 * 8;
  for (int64_t j = 0; j < vec_end;) {
    const int blocks = j + 16 <= vec_end ? 2 : 1;
    for (int64_t p0 = 0; p0 < a.k; p0 += kFeaturesPerPass) {
      const int64_t p = std::min<int64_t>(kFeaturesPerPass, a.k - p0);
      const bool bias = a.dbias && p0 == 0;
      kMaskedWeightBlocks[blocks - 1][bias][p - 1](a, j, p0);
    }
    j += 8 * blocks;
  }
  // The last n % 8 hidden units, one at a time.
  const auto* g = static_cast<const float*>(a.g);
  const auto* y = static_cast<const float*>(a.y);
  const auto* x = static_cast<const float*>(a.x);
  auto* dw = static_cast<float*>(a.dw);
  auto* db = static_cast<float*>(a.dbias);
  for (int64_t j = vec_end; j < a.n; ++j) {
    float bias_sum = 0;
    for (int64_t p = 0; p < a.k; ++p) dw[j * a.k + p] = 0;
    for (int64_t i = 0; i < a.m; ++i) {
      const float d = y[i * a.n + j] > 0 ? g[i * a.n + j] : 0.0f;
      bias_sum += d;
      for (int64_t p = 0; p < a.k; ++p) dw[j * a.k + p] += d * x[i * a.x_rs + p * a.x_cs];
    }
    if (db) db[j] = bias_sum;
  }
  return true;
}

}  // namespace

void register_linear_act_cpu() {
  detail::linear_relu_forward_kernel.set(DeviceType::CPU, &linear_relu_forward);
  detail::relu_mask_backward_kernel.set(DeviceType::CPU, &relu_mask_backward);
  detail::relu_mask_weight_grad_kernel.set(DeviceType::CPU, &relu_mask_weight_grad);
}

}  // namespace ignis::cpu
