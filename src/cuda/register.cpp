// The CUDA backend's registration: the allocators, then one call per kernel family (as
// src/cpu/register.cpp). A family without a line here raises NotImplementedError for cuda.
namespace ignis::cuda::detail {
void register_allocators();  // allocator.cpp: device caching + pinned host allocators
void register_transfer();    // transfer.cpp: host <-> device <-> device copies
void register_copy();        // copy.cu: converting copy, fill, where, arange/linspace
void register_unary();       // unary.cu
void register_binary();      // binary.cu
void register_reduce();      // reduce.cu: every ReduceOp
void register_softmax();     // softmax.cu
void register_random();      // random.cu: uniform, normal, randint, bernoulli
void register_randperm();    // randperm.cu: keys + CUB radix sort
void register_gemm();        // gemm.cpp: cuBLASLt
void register_linear_act();  // linear_act.cu: linear + bias (cuBLASLt epilogue) + ReLU
void register_fuse();        // fuse.cu: fused elementwise programs
void register_loss_optim();  // loss_optim.cu: fused cross-entropy, fused SGD
void register_multi_tensor_optim();  // multi_tensor_optim.cu: optimizer updates, unscale
void register_row_norm();    // row_norm.cu: layer norm, group norm
void register_nn();          // nn.cu: batch norm, pooling; cudnn_conv.cpp: convolution
void register_index();       // index.cu: index scan, gather, scatter, masked_select, tril
void register_sort();        // sort.cu: sort, topk, cumsum
void register_data_transforms();  // data_transforms.cu: crop / flip / cutout of batches
}  // namespace ignis::cuda::detail

namespace ignis::detail {
void register_cuda_kernels() {
  using namespace ignis::cuda::detail;
  register_allocators();
  register_transfer();
  register_copy();
  register_unary();
  register_binary();
  register_reduce();
  register_softmax();
  register_random();
  register_randperm();
  register_gemm();
  register_linear_act();
  register_fuse();
  register_loss_optim();
  register_multi_tensor_optim();
  register_nn();
  register_row_norm();
  register_index();
  register_sort();
  register_data_transforms();
}
}  // namespace ignis::detail
