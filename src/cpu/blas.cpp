// STUB: to be replaced by the CPU blas kernels.
namespace ignis::cpu {
void register_linalg_cpu() {}
}  // namespace ignis::cpu
