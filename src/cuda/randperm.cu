// randperm on CUDA (randperm_kernel, src/ops/random_kernels.h), the twin of the CPU's in
// src/cpu/random.cpp: the permutation is the argsort of the 64-bit Philox keys
// kernels::philox::PermKey, ties by index. Here a thread computes the keys of one Philox block
// (so key i is the CPU's key i, bit for bit), CUB's radix sort orders (key, index) pairs —
// stable, so equal keys keep index order, as the CPU breaks ties — and one pass writes the
// sorted indices in the output's dtype. Same generator state, same permutation on both devices.
#include <algorithm>
#include <cstdint>
#include <cub/cub.cuh>

#include "core/tensor_impl.h"
#include "cuda/launch.cuh"
#include "kernels/convert.h"
#include "kernels/philox.h"
#include "ops/random_kernels.h"

namespace ignis::cuda::detail {
namespace {
namespace ph = kernels::philox;
using ignis::detail::make_tensor;

/// keys[i] = PermKey value i of (seed, offset), index[i] = i; a thread per Philox block.
__global__ void perm_keys_kernel(
    int64_t n, uint64_t seed, uint64_t offset, uint64_t* keys, int64_t* index) {
  constexpr int K = ph::PermKey::kPerBlock;
  const int64_t blocks = (n + K - 1) / K;
  for (int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; b < blocks;
       b += int64_t(gridDim.x) * blockDim.x) {
    uint64_t v[K];
    ph::PermKey{}.values(ph::block_words(seed, offset + uint64_t(b)), v);
    for (int j = 0; j < K; ++j) {
      const int64_t i = b * K + j;
      if (i < n) keys[i] = v[j], index[i] = i;
    }
  }
}

template <class T>
__global__ void store_perm_kernel(int64_t n, const int64_t* sorted, T* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = kernels::convert<T>(sorted[i]);
}

void randperm(const Tensor& out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Device dev = out.device();
  LaunchOn on(dev);
  Tensor keys = make_tensor({2 * n}, kInt64, dev);  // uint64 keys in, then out
  Tensor index = make_tensor({2 * n}, kInt64, dev);
  auto* k = static_cast<uint64_t*>(keys.data_ptr());
  auto* ix = static_cast<int64_t*>(index.data_ptr());
  perm_keys_kernel<<<grid_for((n + 1) / 2), kThreads, 0, on.stream>>>(n, seed, offset, k, ix);
  IGNIS_CUDA_CHECK_LAUNCH("randperm");
  size_t temp_bytes = 0;
  IGNIS_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(
          nullptr, temp_bytes, k, k + n, ix, ix + n, n, 0, 64, on.stream),
      "randperm");
  Tensor temp = make_tensor({std::max<int64_t>(int64_t(temp_bytes), 1)}, kUInt8, dev);
  IGNIS_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(
          temp.data_ptr(), temp_bytes, k, k + n, ix, ix + n, n, 0, 64, on.stream),
      "randperm");
  visit_dtype(out.dtype(), [&]<class T>() {
    store_perm_kernel<T>
        <<<grid_for(n), kThreads, 0, on.stream>>>(n, ix + n, static_cast<T*>(out.data_ptr()));
  });
  IGNIS_CUDA_CHECK_LAUNCH("randperm");
}

}  // namespace

void register_randperm() { ignis::detail::randperm_kernel.set(DeviceType::CUDA, &randperm); }

}  // namespace ignis::cuda::detail
