// CUDA kernels of the linear + ReLU fusion (src/ops/linear_act_kernels.h), the twins of
// src/cpu/linear_act.cpp.
//
// Forward: cuBLASLt computes x W^T with the bias added in its epilogue (CUBLASLT_EPILOGUE_BIAS,
// src/cuda/gemm.h), then one in-place pass applies the ReLU. cuBLASLt's RELU_BIAS epilogue
// would save that pass, but it is documented as max(x, 0), which is not promised to keep NaN;
// the node keeps relu's NaN (tests/nn/test_linear_act.cpp), so the ReLU is our functor.
// Backward: dz = g where y > 0 (else 0) in one pass that also sums dz's columns into the bias
// gradient: a thread per column walks a chunk of rows, and the chunks' partial sums are added
// in chunk order by a second kernel (deterministic, no atomics).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/gemm.h"
#include "cuda/launch.cuh"
#include "ignis/ops.h"
#include "kernels/unary_ops.h"
#include "ops/linear_act_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::LinearForward;
using ignis::detail::ReluMaskBackward;

/// x = relu(x) over n contiguous values, in x's compute type (NaN kept, -0 becomes +0).
template <class T>
__global__ void relu_in_place_kernel(T* __restrict__ x, int64_t n) {
  using C = kernels::opmath_t<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = T(kernels::Relu{}(C(x[i])));
}

template <class T>
void relu_in_place(void* x, int64_t n, cudaStream_t stream) {
  relu_in_place_kernel<T><<<grid_for(n, 4), kThreads, 0, stream>>>(static_cast<T*>(x), n);
}

bool linear_relu_forward(const LinearForward& a) {
  // float64 has no cuBLASLt bias epilogue to rely on: the composed ops take it.
  if (a.dtype != kFloat32 && a.dtype != kBFloat16 && a.dtype != kFloat16) return false;
  if (a.bias && reinterpret_cast<uintptr_t>(a.bias) % 16 != 0) return false;
  ignis::detail::GemmArgs g;
  g.dtype = a.dtype;
  g.m = a.m, g.n = a.n, g.k = a.k;
  g.a = {const_cast<void*>(a.x), {}, a.x_rs, a.x_cs};
  g.b = {const_cast<void*>(a.w), {}, a.w_cs, a.w_rs};  // W^T: w's strides swapped
  g.c = {a.out, {}, a.n, 1};
  g.device = a.device;
  LaunchOn on(a.device);
  if (a.bias) {
    if (!gemm_with_epilogue(g, {a.bias})) return false;
  } else {
    ignis::detail::gemm_kernel.get(a.device)(g);
  }
  const int64_t n = a.m * a.n;
  switch (a.dtype) {
    case DType::Float32:
      relu_in_place<float>(a.out, n, on.stream);
      break;
    case DType::BFloat16:
      relu_in_place<BFloat16>(a.out, n, on.stream);
      break;
    default:
      relu_in_place<Half>(a.out, n, on.stream);
      break;
  }
  IGNIS_CUDA_CHECK_LAUNCH("linear_relu");
  return true;
}

/// dz = g where y > 0 for rows [blockIdx.y * rows, + rows) of column j (one thread each, so a
/// warp reads 32 neighbouring columns of a row); the chunk's column sum to partial (if any).
__global__ void relu_mask_columns_kernel(
    const float* __restrict__ g,
    const float* __restrict__ y,
    float* __restrict__ dz,
    float* __restrict__ partial,
    int64_t m,
    int64_t n,
    int64_t rows) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  const int64_t r0 = int64_t(blockIdx.y) * rows;
  const int64_t r1 = r0 + rows < m ? r0 + rows : m;
  float sum = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t at = r * n + j;
    const float d = y[at] > 0 ? g[at] : 0.0f;
    dz[at] = d;
    sum += d;
  }
  if (partial) partial[int64_t(blockIdx.y) * n + j] = sum;
}

/// db[j] = sum over the chunks c, in order, of partial[c][j].
__global__ void column_sum_kernel(
    const float* __restrict__ partial, float* __restrict__ db, int64_t chunks, int64_t n) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  float sum = 0;
  for (int64_t c = 0; c < chunks; ++c) sum += partial[c * n + j];
  db[j] = sum;
}

bool relu_mask_backward(const ReluMaskBackward& a) {
  if (a.dtype != kFloat32) return false;  // as on the CPU: other dtypes take the ops
  LaunchOn on(a.device);
  // Chunks of at least 64 rows, few enough for the grid's y limit.
  const int64_t rows = std::max<int64_t>(64, (a.m + 65534) / 65535);
  const int64_t chunks = std::max<int64_t>(1, (a.m + rows - 1) / rows);
  Tensor partial = a.dbias ? empty({chunks, a.n}, TensorOptions(kFloat32, a.device)) : Tensor();
  const dim3 grid(unsigned((a.n + kThreads - 1) / kThreads), unsigned(chunks));
  if (a.m > 0 && a.n > 0)
    relu_mask_columns_kernel<<<grid, kThreads, 0, on.stream>>>(
        static_cast<const float*>(a.g),
        static_cast<const float*>(a.y),
        static_cast<float*>(a.dz),
        a.dbias ? partial.data_ptr<float>() : nullptr,
        a.m,
        a.n,
        rows);
  if (a.dbias && a.n > 0) {
    if (a.m == 0) {
      IGNIS_CUDA_CHECK(
          cudaMemsetAsync(a.dbias, 0, size_t(a.n) * sizeof(float), on.stream),
          "linear_relu_backward");
    } else {
      column_sum_kernel<<<unsigned((a.n + kThreads - 1) / kThreads), kThreads, 0, on.stream>>>(
          partial.data_ptr<float>(), static_cast<float*>(a.dbias), chunks, a.n);
    }
  }
  IGNIS_CUDA_CHECK_LAUNCH("linear_relu_backward");
  return true;
}

}  // namespace

void register_linear_act() {
  ignis::detail::linear_relu_forward_kernel.set(DeviceType::CUDA, &linear_relu_forward);
  ignis::detail::relu_mask_backward_kernel.set(DeviceType::CUDA, &relu_mask_backward);
}

}  // namespace ignis::cuda::detail
