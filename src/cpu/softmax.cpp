// STUB: to be replaced by the CPU softmax kernels.
namespace ignis::cpu {
void register_softmax_cpu() {}
}  // namespace ignis::cpu
