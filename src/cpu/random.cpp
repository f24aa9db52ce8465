// STUB: to be replaced by the CPU random kernels.
namespace ignis::cpu {
void register_random_cpu() {}
}  // namespace ignis::cpu
