// The CUDA backend's registration: the allocators, then one call per kernel family (as
// src/cpu/register.cpp). A family without a line here raises NotImplementedError for cuda.
namespace ignis::cuda::detail {
void register_allocators();  // allocator.cpp: device caching + pinned host allocators
void register_transfer();    // transfer.cpp: host <-> device <-> device copies
}  // namespace ignis::cuda::detail

namespace ignis::detail {
void register_cuda_kernels() {
  using namespace ignis::cuda::detail;
  register_allocators();
  register_transfer();
}
}  // namespace ignis::detail
