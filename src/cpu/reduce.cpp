// STUB: to be replaced by the CPU reduce kernels.
namespace ignis::cpu {
void register_reduce_cpu() {}
}  // namespace ignis::cpu
