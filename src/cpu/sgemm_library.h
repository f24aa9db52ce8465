// Which library multiplies float32 matrices on the CPU: OpenBLAS, or oneDNN's sgemm where
// OpenBLAS does not know the CPU (Note [Choosing the sgemm library] in sgemm_library.cpp).
#pragma once

namespace ignis::cpu {

enum class SgemmLibrary { OpenBlas, OneDnn };

/// The library chosen for this process (decided once, on first use; IGNIS_CPU_GEMM
/// overrides). Throws ValueError for a bad IGNIS_CPU_GEMM, naming the variable.
SgemmLibrary sgemm_library();

}  // namespace ignis::cpu
