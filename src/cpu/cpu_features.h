// Run-time CPU feature checks for kernels compiled for more than the build's baseline
// instruction set (-march, x86-64-v3 by default): an AVX-512 kernel is built with
// [[gnu::target("avx512f")]] and runs only where use_avx512() says so; an AVX2 one runs only
// where cpu_has_avx2() does (which a v3 build takes for granted, and an x86-64 one does not).
#pragma once

#include <cstdlib>

namespace ignis::cpu {

/// Whether AVX-512 kernels run: the CPU has AVX-512F and IGNIS_CPU_NO_AVX512 is unset (CTest
/// runs the kernels' tests again with it set, so the AVX2 versions are tested on machines
/// that have both). Only in builds whose baseline has FMA (x86-64-v3 and up): an AVX-512 copy
/// fuses a * b + c into one rounding as such a baseline does, so the two give the same bits;
/// beside a plain x86-64 baseline (two roundings) a fused op and its composition would differ
/// in the last bit.
inline bool use_avx512() {
#if defined(__x86_64__) && defined(__GNUC__) && defined(__FMA__)
  static const bool on =
      __builtin_cpu_supports("avx512f") && std::getenv("IGNIS_CPU_NO_AVX512") == nullptr;
  return on;
#else
  return false;
#endif
}

/// True when the CPU runs AVX2 and FMA: hot loops compiled twice (baseline and
/// [[gnu::target("avx2,fma")]]) pick their version with it, and kernels built only for AVX2
/// (inside IGNIS_AVX2_BEGIN / IGNIS_AVX2_END) run only where it holds.
#if defined(__x86_64__) && defined(__GNUC__)
inline bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#else
inline bool cpu_has_avx2() { return false; }
#endif

}  // namespace ignis::cpu

// IGNIS_AVX2_BEGIN ... IGNIS_AVX2_END: the functions defined between them, lambdas included,
// are built for AVX2 and FMA whatever the build's baseline (-march=x86-64 builds too), so a
// file of AVX2 intrinsics compiles everywhere; callers reach them only where cpu_has_avx2().
// Only functions of the file itself belong inside (anonymous-namespace ones): an inline
// function with external linkage first defined there could be the copy that baseline code
// links to.
#if defined(__x86_64__) && defined(__clang__)
#define IGNIS_AVX2_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#define IGNIS_AVX2_END _Pragma("clang attribute pop")
#elif defined(__x86_64__) && defined(__GNUC__)
#define IGNIS_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define IGNIS_AVX2_END _Pragma("GCC pop_options")
#else
#define IGNIS_AVX2_BEGIN
#define IGNIS_AVX2_END
#endif
