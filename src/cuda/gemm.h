// The cuBLASLt product of src/cuda/gemm.cpp for other CUDA kernel files: the gemm slot's
// arguments plus what cuBLASLt's epilogue adds before the store.
#pragma once

#include "ops/linalg_kernels.h"

namespace ignis::cuda::detail {

/// What the epilogue applies to C = alpha A B: a bias (C's column count of elements of C's
/// dtype, contiguous, 16-byte aligned) added to every row, or nothing.
struct GemmEpilogue {
  const void* bias = nullptr;
};

/// C = alpha A B (+ beta C) with the epilogue, on the device's current stream. Returns false
/// when an epilogue was asked for and cuBLASLt offers no algorithm with it (C is then
/// untouched); throws as the gemm slot does otherwise.
bool gemm_with_epilogue(const ignis::detail::GemmArgs& g, const GemmEpilogue& e);

}  // namespace ignis::cuda::detail
