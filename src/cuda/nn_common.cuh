// What the CUDA loss, optimizer and nn kernel files share: sums across a warp and across a
// block (warp shuffles, then one shared slot per warp, returned to every thread; every thread
// of the warp / block must call them), the float/double dispatch of their slots, and the
// device a slot's raw pointer lives on, a tensor's data as an optional kernel pointer.
#pragma once

#include <cuda_runtime.h>

#include "cuda/check.h"
#include "ignis/dtype.h"
#include "ignis/tensor.h"

namespace ignis::cuda::detail {

/// f.template operator()<double>() for float64, <float>() otherwise (the slots' front ends
/// hand these kernels float32 or float64 only).
template <class F>
void visit_float_or_double(DType t, const F& f) {
  if (t == kFloat64)
    f.template operator()<double>();
  else
    f.template operator()<float>();
}

/// A tensor's data as T*, null for an undefined (optional) tensor: the kernels take optional
/// weights, biases and gradients as null pointers.
template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

/// The device holding ptr (some slots carry pointers, not tensors).
inline int device_of(const void* ptr, const char* op) {
  if (ptr == nullptr) {  // an empty tensor: no memory, the current device
    int d = 0;
    IGNIS_CUDA_CHECK(cudaGetDevice(&d), op);
    return d;
  }
  cudaPointerAttributes attr{};
  IGNIS_CUDA_CHECK(cudaPointerGetAttributes(&attr, ptr), op);
  return attr.device;
}

template <class V>
__device__ __forceinline__ V warp_sum(V v) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}

template <class V>
__device__ __forceinline__ V warp_max(V v) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    const V o = __shfl_xor_sync(0xffffffffu, v, d);
    v = (o > v || o != o) ? o : v;  // NaN propagates, as the CPU's running maximum
  }
  return v;
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024).
template <class V>
__device__ V block_sum(V v) {
  __shared__ V partial[32];
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  V r = 0;
  for (int w = 0; w < int(blockDim.x / 32); ++w) r += partial[w];
  return r;
}

}  // namespace ignis::cuda::detail
