// Note [Choosing the sgemm library]
// Debian's OpenBLAS picks its kernels at load time from the CPU's family and model numbers, and
// a CPU newer than the library gets older kernels than its instruction set allows. 0.3.21 runs
// "Prescott" SSE3 kernels on Intel's Emerald Rapids (family 6 model 207, AVX-512): a 1024^3
// sgemm at 26-32 GFLOP/s on one core where its own AVX-512 kernels reach 155, and the small
// products of an MLP step in ~30 us instead of ~5. On AMD's Zen 5 (family 26) it runs its
// AVX2 "Haswell" kernels, 1.6-2.1x slower than oneDNN's sgemm on one core from the MLP's
// [64,10]x[10,512] to [128,512]x[512,512] (docs/performance.md).
// OpenBLAS fixes its choice before main (OPENBLAS_CORETYPE changes it, but only from the
// environment the process starts with), so Ignis cannot correct it; it can use another
// library. oneDNN, which Ignis already links for convolutions, selects its JIT sgemm kernels
// from the CPU's feature bits, not its model, so it is right on CPUs newer than itself. Where
// OpenBLAS does know the CPU the two are even (Emerald Rapids with OpenBLAS's Cooperlake
// kernels: 1024^3 155 against 164 GFLOP/s, [64,10]x[10,512] 4.6 against 5.0 us). Hence:
// float32 products go to oneDNN when OpenBLAS's kernels use narrower vectors than the CPU has
// (SSE kernels on an AVX2 CPU, AVX2 kernels on an AVX-512 CPU), and stay on OpenBLAS
// otherwise. float64 stays on OpenBLAS (oneDNN has no dgemm). IGNIS_CPU_GEMM=openblas|onednn|
// auto overrides the choice (the tests run both paths). docs/performance.md has the figures.
#include "cpu/sgemm_library.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "ignis/ops.h"

extern "C" char* openblas_get_corename(void);  // provided by OpenBLAS

namespace ignis::cpu {
namespace {

std::string lower(std::string s) {
  std::transform(
      s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

/// Vector width in bits of OpenBLAS's kernel set, by its core name (x86; 128 for the SSE-era
/// and AVX-without-FMA sets).
int openblas_kernel_bits(const std::string& core) {
  for (const char* avx512 : {"skylakex", "cooperlake", "sapphirerapids"})
    if (core == avx512) return 512;
  for (const char* avx2 : {"haswell", "zen"})
    if (core == avx2) return 256;
  return 128;
}

/// OpenBLAS's kernels for this CPU use narrower vectors than the CPU has.
bool openblas_kernels_are_a_fallback() {
#if defined(__x86_64__) && defined(__GNUC__)
  // The hardware's width, not use_avx512() (cpu_features.h): IGNIS_CPU_NO_AVX512 switches
  // Ignis's own kernels, not what a library's kernels can use.
  const int cpu_bits = __builtin_cpu_supports("avx512f")                                 ? 512
                       : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 256
                                                                                         : 128;
  return openblas_kernel_bits(lower(openblas_get_corename())) < cpu_bits;
#else
  return false;  // the kernel names above are x86's
#endif
}

SgemmLibrary choose() {
  const char* env = std::getenv("IGNIS_CPU_GEMM");
  const std::string wanted = env ? lower(env) : std::string("auto");
#if IGNIS_WITH_DNNL
  constexpr bool have_onednn = true;
#else
  constexpr bool have_onednn = false;
#endif
  if (wanted == "openblas") return SgemmLibrary::OpenBlas;
  if (wanted == "onednn") {
    IGNIS_CHECK(
        have_onednn,
        ValueError,
        "IGNIS_CPU_GEMM=onednn: this build of Ignis has no oneDNN (use openblas or auto)");
    return SgemmLibrary::OneDnn;
  }
  IGNIS_CHECK(
      wanted == "auto" || wanted.empty(),
      ValueError,
      "IGNIS_CPU_GEMM={}: expected auto, openblas or onednn",
      env);
  return have_onednn && openblas_kernels_are_a_fallback() ? SgemmLibrary::OneDnn
                                                          : SgemmLibrary::OpenBlas;
}

}  // namespace

SgemmLibrary sgemm_library() {
  static const SgemmLibrary chosen = choose();  // a throw leaves it undecided: retried
  return chosen;
}

}  // namespace ignis::cpu

namespace ignis {

std::string cpu_matmul_library() {
  const std::string core = openblas_get_corename();
  if (cpu::sgemm_library() == cpu::SgemmLibrary::OneDnn)
    return "float32: oneDNN sgemm (OpenBLAS's kernels here: " + core + "); float64: OpenBLAS";
  return "OpenBLAS (" + core + " kernels)";
}

}  // namespace ignis
