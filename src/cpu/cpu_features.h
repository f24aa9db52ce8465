// Run-time CPU feature checks for kernels compiled for more than the build's baseline
// instruction set (-march, x86-64-v3 by default): an AVX-512 kernel is built with
// [[gnu::target("avx512f")]] and runs only where use_avx512() says so.
#pragma once

#include <cstdlib>

namespace ignis::cpu {

/// Whether AVX-512 kernels run: the CPU has AVX-512F and IGNIS_CPU_NO_AVX512 is unset (CTest
/// runs the kernels' tests again with it set, so the AVX2 versions are tested on machines
/// that have both).
inline bool use_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool on =
      __builtin_cpu_supports("avx512f") && std::getenv("IGNIS_CPU_NO_AVX512") == nullptr;
  return on;
#else
  return false;
#endif
}

}  // namespace ignis::cpu
