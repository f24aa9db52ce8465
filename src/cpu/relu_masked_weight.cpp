// The weight gradient of a linear + ReLU layer whose input needs no gradient (an MLP's first
// layer): dw = (g * (y > 0))^T x with x a few features wide. OpenBLAS runs that product at
// ~80 GFLOP/s after a separate pass that writes the masked gradient (m x n floats) only for the
// product to read it back. Here a block of hidden units walks the rows once per pass: the mask
// is applied in registers and each feature of the pass keeps an accumulator per vector of
// units, so the masked gradient is never stored and each broadcast feature value feeds two
// FMAs (one load per FMA would make the loads, not the FMAs, the limit). With AVX-512 (32
// registers) a block is 32 units and up to 12 features, so the MLP's 10 take one pass and each
// row's g and y are read as whole cache lines once; with AVX2 a block is 16 units and 5
// features. The accumulators are only ever indexed by constants (template packs), so that the
// compiler keeps every one in a register (a loop over features left them in memory, stored on
// every row).
#include "cpu/relu_masked_weight.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "cpu/cpu_features.h"

namespace ignis::cpu {
namespace {

/// Above these the product leaves the caches the kernels rely on; BLAS blocks for them.
constexpr int64_t kMaxMaskedWeightFeatures = 48;
constexpr int64_t kMaxMaskedWeightElems = int64_t(1) << 17;  // m * n of g (and of y)

IGNIS_AVX2_BEGIN
// ---- AVX2: 8 or 16 units, up to 5 features per pass -----------------------------------------
constexpr int kFeaturesPerPass = 5;  // 2 x 5 accumulators + masks and sums: 15 of 16 registers

/// Features [p0, p0 + P) of hidden units [j, j + 8 * Blocks), P = sizeof...(Q): dw rows
/// j..j+8*Blocks-1 at those columns and, with Bias, db over the same units (the first pass
/// only).
template <int Blocks, bool Bias, size_t... Q>
void masked_weight_block(
    const detail::ReluMaskWeightGrad& a, int64_t j, int64_t p0, std::index_sequence<Q...>) {
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
    const __m256 d0 = _mm256_and_ps(
        _mm256_loadu_ps(g + i * n), _mm256_cmp_ps(_mm256_loadu_ps(y + i * n), zero, _CMP_GT_OQ));
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

IGNIS_AVX2_END

// ---- AVX-512: 32 units, up to 12 features per pass ------------------------------------------
constexpr int kFeaturesPerPass512 = 12;  // 2 x 12 accumulators + masks and sums: 29 of 32

/// Features [p0, p0 + P) of hidden units [j, j + 32): dw rows j..j+31 at those columns and,
/// with Bias, db over the same units.
template <bool Bias, size_t... Q>
[[gnu::target("avx512f")]] void masked_weight_block_avx512(
    const detail::ReluMaskWeightGrad& a, int64_t j, int64_t p0, std::index_sequence<Q...>) {
  constexpr size_t P = sizeof...(Q);
  const float* g = static_cast<const float*>(a.g) + j;
  const float* y = static_cast<const float*>(a.y) + j;
  const float* x = static_cast<const float*>(a.x) + p0 * a.x_cs;
  const int64_t n = a.n, x_rs = a.x_rs, x_cs = a.x_cs;
  const __m512 zero = _mm512_setzero_ps();
  __m512 acc0[P], acc1[P];
  ((acc0[Q] = zero), ...);
  ((acc1[Q] = zero), ...);
  __m512 bias0 = zero, bias1 = zero;
  for (int64_t i = 0; i < a.m; ++i) {
    const float* xi = x + i * x_rs;
    const __m512 d0 = _mm512_maskz_mov_ps(
        _mm512_cmp_ps_mask(_mm512_loadu_ps(y + i * n), zero, _CMP_GT_OQ),
        _mm512_loadu_ps(g + i * n));
    const __m512 d1 = _mm512_maskz_mov_ps(
        _mm512_cmp_ps_mask(_mm512_loadu_ps(y + i * n + 16), zero, _CMP_GT_OQ),
        _mm512_loadu_ps(g + i * n + 16));
    if constexpr (Bias) {
      bias0 = _mm512_add_ps(bias0, d0);
      bias1 = _mm512_add_ps(bias1, d1);
    }
    // Both FMAs of a feature together, its value broadcast straight into them: 24
    // accumulators, the two masked gradients and the bias sums leave no room for 12 broadcast
    // values held at once (broadcasting them all first spilled registers on every row).
    // (Fold expressions, not a lambda: a lambda would not inherit the AVX-512 target.)
    ((acc0[Q] = _mm512_fmadd_ps(d0, _mm512_set1_ps(xi[int64_t(Q) * x_cs]), acc0[Q]),
      acc1[Q] = _mm512_fmadd_ps(d1, _mm512_set1_ps(xi[int64_t(Q) * x_cs]), acc1[Q])),
     ...);
  }
  alignas(64) float columns[2][P][16];
  (_mm512_store_ps(columns[0][Q], acc0[Q]), ...);
  (_mm512_store_ps(columns[1][Q], acc1[Q]), ...);
  auto* dw = static_cast<float*>(a.dw);
  for (int r = 0; r < 32; ++r)
    for (size_t p = 0; p < P; ++p) dw[(j + r) * a.k + p0 + int64_t(p)] = columns[r / 16][p][r % 16];
  if constexpr (Bias) {
    auto* db = static_cast<float*>(a.dbias) + j;
    _mm512_storeu_ps(db, bias0);
    _mm512_storeu_ps(db + 16, bias1);
  }
}

template <bool Bias, int P>
void masked_weight_block_avx512(const detail::ReluMaskWeightGrad& a, int64_t j, int64_t p0) {
  masked_weight_block_avx512<Bias>(a, j, p0, std::make_index_sequence<P>());
}
template <bool Bias, size_t... P>
constexpr std::array<MaskedWeightBlock, sizeof...(P)> masked_weight_blocks_avx512(
    std::index_sequence<P...>) {
  return {&masked_weight_block_avx512<Bias, int(P) + 1>...};
}
/// [Bias][P - 1].
constexpr std::array<std::array<MaskedWeightBlock, kFeaturesPerPass512>, 2> kMaskedWeightBlocks512 =
    {masked_weight_blocks_avx512<false>(std::make_index_sequence<kFeaturesPerPass512>()),
     masked_weight_blocks_avx512<true>(std::make_index_sequence<kFeaturesPerPass512>())};

}  // namespace

bool relu_mask_weight_grad(const detail::ReluMaskWeightGrad& a) {
  if (a.dtype != kFloat32 || a.k > kMaxMaskedWeightFeatures || a.m * a.n > kMaxMaskedWeightElems ||
      !cpu_has_avx2())
    return false;
  int64_t j = 0;  // the next hidden unit
  if (use_avx512())
    for (; j + 32 <= a.n; j += 32)
      for (int64_t p0 = 0; p0 < a.k; p0 += kFeaturesPerPass512) {
        const int64_t p = std::min<int64_t>(kFeaturesPerPass512, a.k - p0);
        kMaskedWeightBlocks512[a.dbias && p0 == 0][p - 1](a, j, p0);
      }
  const int64_t vec_end = a.n / 8 * 8;
  while (j < vec_end) {
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
  for (; j < a.n; ++j) {
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

}  // namespace ignis::cpu
