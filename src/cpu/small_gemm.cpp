// The thin-product float32 GEMM of small_gemm.h: 6 x 16 register tiles (12 accumulators of
// 8 floats), A broadcast element by element (any strides), B read as rows of 16 contiguous
// floats, the epilogue (alpha, beta, bias, ReLU) applied in registers before the one store.
// With AVX-512, the common epilogues (none; bias; bias + ReLU) into a row-major C take 4 x 64
// tiles instead: with an inner dimension of a few features the stores and the epilogue are a large
// share of each tile, and a 512-bit tile has half as many of them per multiply-add.
#include "cpu/small_gemm.h"

#include <immintrin.h>

#include <algorithm>

#include "cpu/cpu_features.h"

namespace ignis::cpu {

// Everything down to small_sgemm is AVX2 code, reached only through a plan that
// plan_small_sgemm made, which it makes only where cpu_has_avx2().
IGNIS_AVX2_BEGIN
namespace {

constexpr int kMR = 6;   // rows of a register tile
constexpr int kNR = 16;  // columns of a register tile (two AVX2 vectors)

// Note [Small GEMM rule]
// The kernel is used for float32 products that are thin — an inner dimension k <= 16, or an
// output with at most 16 rows or columns — and small (m * n * k <= 2^22 multiply-adds; larger
// ones OpenBLAS threads well), with an output side of at least one full tile width (16) and
// k <= 1024 (matrix-vector products and long dot products, latency-bound in register tiles,
// stay with BLAS's gemv and dot). It vectorises along the output's longer side: a product with
// more rows than columns is computed as C^T = B^T A^T, storing C^T's tiles through C's strides.
// The operand read as vectors (B of the chosen orientation) needs contiguous columns; one that
// has not is packed first when it is small (at most kMaxPack floats, so the copy stays in L1
// and is cheap next to the product); otherwise the product goes to BLAS.
constexpr int64_t kMaxThin = 16;
constexpr double kMaxWork = double(1 << 22);
constexpr int64_t kMaxPack = 8192;
constexpr int64_t kMaxK = 1024;

/// Lane mask with the first `count` (0..8) lanes set.
__m256i lane_mask(int count) {
  alignas(32) static const int table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - count));
}

/// ReLU that keeps NaN: lanes where !(v <= 0) keep v, the others (incl. -0) become +0.
__m256 relu_keep_nan(__m256 v) {
  return _mm256_and_ps(v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_NLE_UQ));
}

struct Epilogue {
  __m256 alpha, beta;
  bool scale, read_c, relu;
  /// The tile value of one vector: C read at `c` (through `load`) when beta != 0.
  __m256 apply(__m256 acc, __m256 old_c, __m256 bias) const {
    __m256 v = scale ? _mm256_mul_ps(acc, alpha) : acc;
    if (read_c) v = _mm256_fmadd_ps(old_c, beta, v);
    v = _mm256_add_ps(v, bias);
    if (relu) v = relu_keep_nan(v);
    return v;
  }
};

/// Epilogues with their own code path (the others take the general one, which tests the
/// options per vector).
enum EpilogueKind : int {
  kPlain,     // C = A @ B: alpha 1, beta 0, no bias, no ReLU
  kBiasRelu,  // C = relu(A @ B + column bias): the fused linear layer
  kBias,      // C = A @ B + column bias: a linear layer without activation
  kGeneral,
};
constexpr bool adds_bias(int kind) { return kind == kBiasRelu || kind == kBias; }
constexpr bool applies_relu(int kind) { return kind == kBiasRelu; }

/// One MR x nr tile (nr <= 16) at rows i0.., columns j0.. of g, finished by epilogue kKind.
template <int MR, int kKind>
void tile(const SmallGemm& g, const Epilogue& e, int64_t i0, int64_t j0, int nr) {
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const float* a = g.a + i0 * g.a_rs;
  const float* b = g.b + j0;
  const int64_t a_rs = g.a_rs, a_cs = g.a_cs, b_rs = g.b_rs, k = g.k;
  if (nr == kNR) {
    for (int64_t p = 0; p < k; ++p) {
      const __m256 b0 = _mm256_loadu_ps(b + p * b_rs);
      const __m256 b1 = _mm256_loadu_ps(b + p * b_rs + 8);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * a_rs + p * a_cs);
        acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
      }
    }
  } else {
    const __m256i m0 = lane_mask(std::min(nr, 8)), m1 = lane_mask(std::max(nr - 8, 0));
    for (int64_t p = 0; p < k; ++p) {
      const __m256 b0 = _mm256_maskload_ps(b + p * b_rs, m0);
      const __m256 b1 = _mm256_maskload_ps(b + p * b_rs + 8, m1);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * a_rs + p * a_cs);
        acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
      }
    }
  }
  // Epilogue, then store (vector stores when C's columns are contiguous, element by element
  // through the strides otherwise — the transposed orientation).
  const __m256i m0 = lane_mask(std::min(nr, 8)), m1 = lane_mask(std::max(nr - 8, 0));
  if constexpr (adds_bias(kKind)) {
    if (g.c_cs == 1 && nr == kNR) {
      __m256 col0 = _mm256_setzero_ps(), col1 = _mm256_setzero_ps();
      if (g.col_bias) {
        col0 = _mm256_loadu_ps(g.col_bias + j0);
        col1 = _mm256_loadu_ps(g.col_bias + j0 + 8);
      }
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        float* c = g.c + (i0 + r) * g.c_rs + j0;
        __m256 v0 = _mm256_add_ps(acc[r][0], col0), v1 = _mm256_add_ps(acc[r][1], col1);
        if constexpr (applies_relu(kKind)) v0 = relu_keep_nan(v0), v1 = relu_keep_nan(v1);
        _mm256_storeu_ps(c, v0);
        _mm256_storeu_ps(c + 8, v1);
      }
      return;
    }
  }
  if constexpr (kKind == kPlain) {
    if (g.c_cs == 1) {
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        float* c = g.c + (i0 + r) * g.c_rs + j0;
        if (nr == kNR) {
          _mm256_storeu_ps(c, acc[r][0]);
          _mm256_storeu_ps(c + 8, acc[r][1]);
        } else {
          _mm256_maskstore_ps(c, m0, acc[r][0]);
          _mm256_maskstore_ps(c + 8, m1, acc[r][1]);
        }
      }
      return;
    }
  }
  __m256 col0 = _mm256_setzero_ps(), col1 = _mm256_setzero_ps();
  if (g.col_bias) {
    col0 = _mm256_maskload_ps(g.col_bias + j0, m0);
    col1 = _mm256_maskload_ps(g.col_bias + j0 + 8, m1);
  }
  // The bias of row r of the tile: the column bias, plus the row's own when there is one.
  auto bias_of = [&](int r, __m256 col) {
    return g.row_bias ? _mm256_add_ps(col, _mm256_set1_ps(g.row_bias[i0 + r])) : col;
  };
  if (g.c_cs == 1) {
    // Masked stores are slow on some x86 cores: full tiles use plain ones.
    const bool full = nr == kNR;
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      float* c = g.c + (i0 + r) * g.c_rs + j0;
      __m256 old0 = _mm256_setzero_ps(), old1 = _mm256_setzero_ps();
      if (e.read_c) {
        old0 = full ? _mm256_loadu_ps(c) : _mm256_maskload_ps(c, m0);
        old1 = full ? _mm256_loadu_ps(c + 8) : _mm256_maskload_ps(c + 8, m1);
      }
      const __m256 v0 = e.apply(acc[r][0], old0, bias_of(r, col0));
      const __m256 v1 = e.apply(acc[r][1], old1, bias_of(r, col1));
      if (full) {
        _mm256_storeu_ps(c, v0);
        _mm256_storeu_ps(c + 8, v1);
      } else {
        _mm256_maskstore_ps(c, m0, v0);
        _mm256_maskstore_ps(c + 8, m1, v1);
      }
    }
    return;
  }
  alignas(32) float row[kNR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    float* c = g.c + (i0 + r) * g.c_rs + j0 * g.c_cs;
    alignas(32) float old[kNR] = {};
    if (e.read_c)
      for (int j = 0; j < nr; ++j) old[j] = c[j * g.c_cs];
    _mm256_store_ps(row, e.apply(acc[r][0], _mm256_load_ps(old), bias_of(r, col0)));
    _mm256_store_ps(row + 8, e.apply(acc[r][1], _mm256_load_ps(old + 8), bias_of(r, col1)));
    for (int j = 0; j < nr; ++j) c[j * g.c_cs] = row[j];
  }
}

using TileFn = void (*)(const SmallGemm&, const Epilogue&, int64_t, int64_t, int);
template <int kKind>
constexpr TileFn kTiles[kMR + 1] = {
    nullptr,
    tile<1, kKind>,
    tile<2, kKind>,
    tile<3, kKind>,
    tile<4, kKind>,
    tile<5, kKind>,
    tile<6, kKind>};

// ---- AVX-512 tiles: MR x (16 * NV), C row-major, full panels --------------------------------
constexpr int kMR512 = 4;  // rows of a tile
constexpr int kNV512 = 4;  // 512-bit vectors per tile row: 16 accumulators, 4 of B, 1 broadcast
constexpr int kNR512 = 16 * kNV512;

/// ReLU that keeps NaN (as relu_keep_nan): lanes where !(v <= 0) keep v, the others are +0.
[[gnu::target("avx512f")]] inline __m512 relu_keep_nan512(__m512 v) {
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NLE_UQ), v);
}

/// One MR x kNR512 tile at rows i0.., columns j0.. of g (c_cs == 1), epilogue kPlain, kBias
/// or kBiasRelu. The same arithmetic per element as tile(): the k products summed from zero in
/// order, then the bias added, then ReLU; so results do not depend on the instruction set.
/// Four vectors per row: each broadcast feeds four FMAs, so a step of p loads 4 + MR values
/// for 4 * MR FMAs.
template <int MR, int kKind>
[[gnu::target("avx512f")]] void tile512(const SmallGemm& g, int64_t i0, int64_t j0) {
  static_assert(kKind != kGeneral);
  __m512 acc[MR][kNV512];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV512; ++v) acc[r][v] = _mm512_setzero_ps();
  const float* a = g.a + i0 * g.a_rs;
  const float* b = g.b + j0;
  const int64_t a_rs = g.a_rs, a_cs = g.a_cs, b_rs = g.b_rs, k = g.k;
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[kNV512];
#pragma GCC unroll 4
    for (int v = 0; v < kNV512; ++v) bv[v] = _mm512_loadu_ps(b + p * b_rs + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * a_rs + p * a_cs]);
#pragma GCC unroll 4
      for (int v = 0; v < kNV512; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  float* c = g.c + i0 * g.c_rs + j0;
  __m512 col[kNV512];
#pragma GCC unroll 4
  for (int v = 0; v < kNV512; ++v)
    col[v] = adds_bias(kKind) && g.col_bias ? _mm512_loadu_ps(g.col_bias + j0 + 16 * v)
                                            : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV512; ++v) {
      __m512 out = acc[r][v];
      if constexpr (adds_bias(kKind)) out = _mm512_add_ps(out, col[v]);
      if constexpr (applies_relu(kKind)) out = relu_keep_nan512(out);
      _mm512_storeu_ps(c + r * g.c_rs + 16 * v, out);
    }
}

using Tile512Fn = void (*)(const SmallGemm&, int64_t, int64_t);
template <int kKind>
constexpr Tile512Fn kTiles512[kMR512 + 1] = {
    nullptr,
    tile512<1, kKind>,
    tile512<2, kKind>,
    tile512<3, kKind>,
    tile512<4, kKind>};

/// The full kNR512-column panels of g with AVX-512 tiles; returns the first column left to the AVX2
/// tiles (n when every panel was full).
template <int kKind>
int64_t full_panels_avx512(const SmallGemm& g) {
  const int64_t panels_end = g.n / kNR512 * kNR512;
  for (int64_t j0 = 0; j0 < panels_end; j0 += kNR512) {
    int64_t i0 = 0;
    for (; i0 + kMR512 <= g.m; i0 += kMR512) tile512<kMR512, kKind>(g, i0, j0);
    if (i0 < g.m) kTiles512<kKind>[g.m - i0](g, i0, j0);
  }
  return panels_end;
}

template <int kKind>
void all_tiles(const SmallGemm& g, const Epilogue& e) {
  // Column panels outside, row tiles inside: a k x 16 panel of B stays in L1 while every row
  // tile of A passes over it (A is the thin operand, or small).
  int64_t first_column = 0;
  if constexpr (kKind != kGeneral)
    if (g.c_cs == 1 && use_avx512()) first_column = full_panels_avx512<kKind>(g);
  for (int64_t j0 = first_column; j0 < g.n; j0 += kNR) {
    const int nr = int(std::min<int64_t>(kNR, g.n - j0));
    int64_t i0 = 0;
    for (; i0 + kMR <= g.m; i0 += kMR) tile<kMR, kKind>(g, e, i0, j0, nr);
    if (i0 < g.m) kTiles<kKind>[g.m - i0](g, e, i0, j0, nr);
  }
}

/// Transposes the 8 x 8 block whose rows start at in[0..7] into out[0..7] (row q of the
/// result = column q of the block).
void transpose8x8(const float* const in[8], float* const out[8]) {
  __m256 r[8], t[8];
  for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(in[q]);
  for (int q = 0; q < 8; q += 2) {
    t[q] = _mm256_unpacklo_ps(r[q], r[q + 1]);
    t[q + 1] = _mm256_unpackhi_ps(r[q], r[q + 1]);
  }
  for (int q = 0; q < 8; q += 4) {
    r[q] = _mm256_shuffle_ps(t[q], t[q + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(out[q], _mm256_permute2f128_ps(r[q], r[q + 4], 0x20));
    _mm256_storeu_ps(out[q + 4], _mm256_permute2f128_ps(r[q], r[q + 4], 0x31));
  }
}

/// dst (rows x cols, contiguous) = src with element (i, j) at src[i * rs + j * cs]. A source
/// whose rows are contiguous in memory the other way round (rs == 1: a transposed weight) is
/// transposed in 8 x 8 register blocks; the rest is copied element by element.
void pack(const float* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, float* dst) {
  int64_t rows_done = 0, cols_done = 0;
  if (rs == 1 && cs >= 8) {
    rows_done = rows / 8 * 8, cols_done = cols / 8 * 8;
    for (int64_t i0 = 0; i0 < rows_done; i0 += 8)
      for (int64_t j0 = 0; j0 < cols_done; j0 += 8) {
        const float* in[8];
        float* out[8];
        for (int q = 0; q < 8; ++q) {
          in[q] = src + (j0 + q) * cs + i0;  // column j0 + q, rows i0..i0+7
          out[q] = dst + (i0 + q) * cols + j0;
        }
        transpose8x8(in, out);
      }
  }
  // Whatever the blocks left: the last rows % 8 rows, and the last cols % 8 columns.
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j_begin = i < rows_done ? cols_done : 0;
    for (int64_t j = j_begin; j < cols; ++j) dst[i * cols + j] = src[i * rs + j * cs];
  }
}

}  // namespace

void small_sgemm(const SmallGemm& g) {
  Epilogue e;
  e.alpha = _mm256_set1_ps(g.alpha);
  e.beta = _mm256_set1_ps(g.beta);
  e.scale = g.alpha != 1;
  e.read_c = g.beta != 0;
  e.relu = g.relu;
  const bool simple = !e.scale && !e.read_c && !g.row_bias;
  if (simple && !e.relu && !g.col_bias)
    all_tiles<kPlain>(g, e);
  else if (simple && e.relu)
    all_tiles<kBiasRelu>(g, e);
  else if (simple)
    all_tiles<kBias>(g, e);
  else
    all_tiles<kGeneral>(g, e);
}
IGNIS_AVX2_END

SmallGemmPlan plan_small_sgemm(int64_t m, int64_t n, int64_t k, int64_t a_rs, int64_t b_cs) {
  SmallGemmPlan p;
  if (!cpu_has_avx2()) return p;
  const bool thin = k <= kMaxThin || std::min(m, n) <= kMaxThin;
  if (!thin || double(m) * double(n) * double(k) > kMaxWork || std::max(m, n) < kNR || k > kMaxK)
    return p;
  p.transposed = m > n;
  // The vector operand: B, or A^T when transposed; its "column" stride is B's cs or A's rs.
  const int64_t cols = p.transposed ? m : n;
  const int64_t col_stride = p.transposed ? a_rs : b_cs;
  if (col_stride != 1 && cols > 1) {
    if (k * cols > kMaxPack) return p;
    p.pack_b = true;
    p.pack_elems = k * cols;
  }
  p.use = true;
  return p;
}

void run_small_sgemm(const SmallGemmPlan& plan, SmallGemm g, int64_t b_cs, float* scratch) {
  if (plan.transposed) {
    // C^T (n x m) = B^T (n x k) @ A^T (k x m): swap the operands and transpose every stride.
    // The bias, per column of C, becomes per row of C^T.
    const float* a = g.a;
    const int64_t a_rs = g.a_rs, a_cs = g.a_cs;
    g.a = g.b;
    g.a_rs = b_cs;
    g.a_cs = g.b_rs;
    g.b = a;
    g.b_rs = a_cs;
    b_cs = a_rs;
    std::swap(g.m, g.n);
    std::swap(g.c_rs, g.c_cs);
    std::swap(g.row_bias, g.col_bias);
  }
  if (plan.pack_b) {
    pack(g.b, g.k, g.n, g.b_rs, b_cs, scratch);
    g.b = scratch;
    g.b_rs = g.n;
  }
  small_sgemm(g);
}

}  // namespace ignis::cpu
