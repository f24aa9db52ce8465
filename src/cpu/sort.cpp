// STUB: to be replaced by the CPU sort kernels.
namespace ignis::cpu {
void register_sort_cpu() {}
}  // namespace ignis::cpu
