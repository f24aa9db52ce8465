// The kernel slot of the linear-algebra family: one strided, batched GEMM
//   C[b] = alpha * A[b] @ B[b] + beta * C[b]        (A: m x k, B: k x n, C: m x n)
// that every front end of src/ops/linalg.cpp (matmul, mm, bmm, addmm, baddbmm, dot) reduces
// to. Each operand is described by strides alone, so transposed views, broadcast (stride-0)
// batch dimensions and strided slices reach the backend without copies; the backend decides
// what its library accepts as is (see Note [GEMM operand layouts] in src/cpu/blas.cpp).
#pragma once

#include "core/dispatch.h"

namespace ignis::detail {

/// One operand of a batched GEMM. Element (batch index b..., row i, column j) sits at
///   data + sum_d(b[d] * batch_strides[d]) + i * row_stride + j * col_stride   (in elements).
/// Strides are >= 0; a batch stride of 0 means the matrix is shared by that batch dimension.
struct GemmMatrix {
  void* data = nullptr;
  Shape batch_strides;  // one per GemmArgs::batch_sizes entry
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

/// Arguments of gemm_kernel. The front end guarantees: m, n, k >= 1 and every batch size >= 1
/// (empty products and alpha == 0 are handled before the call); a, b and c share `dtype`, which is
/// not bool; c is freshly allocated, does not overlap a or b, has col_stride 1, row_stride >= n and
/// no zero batch strides (every C element is written exactly once).
struct GemmArgs {
  DType dtype = kFloat32;
  Shape batch_sizes;  // coalesced batch dimensions; empty = a single matrix
  int64_t m = 0, n = 0, k = 0;
  GemmMatrix a, b, c;
  /// alpha and beta as given (integers stay exact for integer dtypes). alpha != 0 (the front
  /// end handles alpha == 0 itself). beta == 0 means C is not read: NaN or garbage in it is
  /// ignored, as in BLAS and PyTorch.
  Scalar alpha = 1, beta = 0;
  Device device;  // of a, b and c
};

inline KernelSlot<void (*)(const GemmArgs&)> gemm_kernel{"gemm"};

}  // namespace ignis::detail
