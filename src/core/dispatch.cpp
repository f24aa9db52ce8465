// Runs the backends' registration functions once.
#include "core/dispatch.h"

#include <mutex>

namespace ignis::detail {

void register_cpu_kernels();   // src/cpu/register.cpp
void register_cuda_kernels();  // src/cuda/register.cu, or a no-op in src/cuda/stub.cpp

namespace {
/// The CPU kernels are compiled for IGNIS_CPU_ARCH (AVX2+FMA by default); refuse clearly on
/// a CPU without those instructions instead of dying of SIGILL in the first loop.
void check_cpu_features() {
#if defined(__x86_64__) && defined(__AVX2__)
  __builtin_cpu_init();
  IGNIS_CHECK(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), Error,
              "[ignis] this build targets {} (AVX2 and FMA) but this CPU lacks them; rebuild "
              "with -DIGNIS_CPU_ARCH=x86-64",
              IGNIS_CPU_ARCH_NAME);
#endif
}
}  // namespace

void ensure_kernels_registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    check_cpu_features();
    register_cpu_kernels();
    register_cuda_kernels();
  });
}

}  // namespace ignis::detail
