// bfloat16 matrix products through oneDNN's matmul (src/cpu/dnnl_matmul.cpp), used by the CPU
// GEMM (src/cpu/blas.cpp) when Ignis is built with oneDNN.
#pragma once

#include "ops/linalg_kernels.h"

namespace ignis::cpu {

/// Runs a bfloat16 GEMM with oneDNN (bf16 inputs, float accumulation, one rounding of the
/// result). Returns false, having written nothing, when oneDNN has no optimised kernel for
/// this case (its reference implementation is slower than converting to float32 for sgemm).
bool dnnl_bf16_gemm(const detail::GemmArgs& g);

}  // namespace ignis::cpu
