// STUB: to be replaced by the CPU index kernels.
namespace ignis::cpu {
void register_index_cpu() {}
}  // namespace ignis::cpu
