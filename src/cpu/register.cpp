// The CPU backend's registration: one call per kernel family. A new family adds one line.
namespace ignis::cpu {
void register_unary_cpu();    // unary.cpp
void register_binary_cpu();   // binary.cpp
void register_copy_cpu();     // copy.cpp
void register_reduce_cpu();   // reduce.cpp
void register_linalg_cpu();   // blas.cpp
void register_index_cpu();    // index.cpp
void register_sort_cpu();     // sort.cpp
void register_softmax_cpu();  // softmax.cpp
void register_loss_cpu();     // cross_entropy.cpp: the fused cross-entropy
void register_linear_act_cpu();  // linear_act.cpp: linear + ReLU fusion
void register_fuse_cpu();        // fuse.cpp: fused elementwise programs
void register_optim_cpu();    // optim_update.cpp: fused optimizer updates
void register_random_cpu();   // random.cpp
void register_nn_cpu();       // batch_norm.cpp: conv (oneDNN), pooling, normalisation
void register_data_cpu();     // data_transforms.cpp: crop / flip / cutout of batches
}  // namespace ignis::cpu

namespace ignis::detail {
void register_cpu_kernels() {
  cpu::register_unary_cpu();
  cpu::register_binary_cpu();
  cpu::register_copy_cpu();
  cpu::register_reduce_cpu();
  cpu::register_linalg_cpu();
  cpu::register_index_cpu();
  cpu::register_sort_cpu();
  cpu::register_softmax_cpu();
  cpu::register_loss_cpu();
  cpu::register_linear_act_cpu();
  cpu::register_fuse_cpu();
  cpu::register_optim_cpu();
  cpu::register_random_cpu();
  cpu::register_nn_cpu();
  cpu::register_data_cpu();
}
}  // namespace ignis::detail
