// A register-blocked AVX2 float32 GEMM for thin products, where OpenBLAS's per-call overhead
// (packing both operands, blocking for caches these matrices never leave) costs as much as
// the arithmetic: an inner dimension of a few features, or an output with a few columns or
// rows, as in the layers of a small MLP and their gradients. See Note [Small GEMM rule].
#pragma once

#include <cstdint>

namespace ignis::cpu {

/// C = act(alpha * A @ B + beta * C + bias) for A (m x k), B (k x n), C (m x n), each element
/// (i, j) at base + i * rs + j * cs (in floats). B's columns must be contiguous (b_cs == 1);
/// plan_small_sgemm arranges that. act is the identity or ReLU; bias is col_bias[j] (n floats)
/// plus row_bias[i] (m floats), either may be null. beta == 0 means C is not read.
struct SmallGemm {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t a_rs = 0, a_cs = 0;
  const float* b = nullptr;
  int64_t b_rs = 0;
  float* c = nullptr;
  int64_t c_rs = 0, c_cs = 0;
  float alpha = 1, beta = 0;
  const float* col_bias = nullptr;
  const float* row_bias = nullptr;
  bool relu = false;
};

/// How a product with arbitrary strides reaches small_sgemm: whether it is computed as
/// C^T = B^T A^T (the output's long side then runs along the vector lanes) and whether B,
/// in the chosen orientation, is first packed into a contiguous k x n buffer.
struct SmallGemmPlan {
  bool use = false;         // false: leave the product to BLAS
  bool transposed = false;  // compute C^T = B^T A^T
  bool pack_b = false;      // copy B (of the chosen orientation) into pack_elems() floats
  int64_t pack_elems = 0;
};

/// The plan for C (m x n) = A (m x k) @ B (k x n), A's row stride a_rs, B's column stride b_cs
/// (the strides that decide whether the vector operand needs packing).
SmallGemmPlan plan_small_sgemm(int64_t m, int64_t n, int64_t k, int64_t a_rs, int64_t b_cs);

/// Runs the product as planned. `g` describes it in its original orientation except that
/// b_cs is given separately (B may have any strides); scratch holds plan.pack_elems floats.
/// Biases refer to C's rows and columns in the original orientation.
void run_small_sgemm(const SmallGemmPlan& plan, SmallGemm g, int64_t b_cs, float* scratch);

/// The kernel itself: g.b must have contiguous columns.
void small_sgemm(const SmallGemm& g);

}  // namespace ignis::cpu
