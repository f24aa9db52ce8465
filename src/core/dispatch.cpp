// Runs the backends' registration functions once.
#include "core/dispatch.h"

#include <mutex>

namespace ignis::detail {

void register_cpu_kernels();   // src/cpu/register.cpp
void register_cuda_kernels();  // src/cuda/register.cu, or a no-op in src/cuda/stub.cpp

void ensure_kernels_registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_cpu_kernels();
    register_cuda_kernels();
  });
}

}  // namespace ignis::detail
