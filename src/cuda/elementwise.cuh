// The generic CUDA elementwise kernel: out = f(in...) over an ElementwisePlan, for any
// functor f and operand types. Three paths, chosen per launch:
//   - contiguous and 16-byte aligned: each thread loads and stores whole 16-byte vectors
//     (V elements of the widest operand type), then a scalar tail;
//   - otherwise strided: each element's operand offsets from its flat index (Offsets), in
//     32-bit arithmetic when plan.fits_int32, else 64-bit.
// Used by unary.cu, binary.cu, copy.cu; the functors of src/kernels run unchanged inside.
#pragma once

#include <utility>

#include "cuda/launch.cuh"

namespace ignis::cuda::detail {

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <int V, class Out, class F, class... VIns>
__device__ __forceinline__ void apply_vec(const F& f, Vec<Out, V>& o, const VIns&... vin) {
#pragma unroll
  for (int k = 0; k < V; ++k) o.v[k] = f(vin.v[k]...);
}

template <int V, class Out, class F, class... Ins>
__global__ void contiguous_kernel(int64_t n, F f, Out* out, const Ins*... in) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t j = first; j < nvec; j += stride) {
    Vec<Out, V> o;
    apply_vec<V>(f, o, reinterpret_cast<const Vec<Ins, V>*>(in)[j]...);
    reinterpret_cast<Vec<Out, V>*>(out)[j] = o;
  }
  for (int64_t i = nvec * V + first; i < n; i += stride) out[i] = f(in[i]...);
}

template <class I, class Out, class F, class... Ins, size_t... K>
__device__ __forceinline__ void apply_at(const F& f, const I (&off)[sizeof...(Ins) + 1],
                                         Out* out, std::index_sequence<K...>,
                                         const Ins*... in) {
  out[off[0]] = f(in[off[K + 1]]...);
}

template <class I, class Out, class F, class... Ins>
__global__ void strided_kernel(int64_t n, Offsets<I, sizeof...(Ins) + 1> offs, F f, Out* out,
                               const Ins*... in) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    I off[sizeof...(Ins) + 1];
    offs.at(I(i), off);
    apply_at<I>(f, off, out, std::index_sequence_for<Ins...>{}, in...);
  }
}

template <class T, class... Ts>
constexpr int widest() {
  int w = int(sizeof(T));
  ((w = int(sizeof(Ts)) > w ? int(sizeof(Ts)) : w), ...);
  return w;
}

template <class Out, class... Ins, class F, size_t... K>
void launch_elementwise_impl(const ElementwisePlan& p, const F& f, const char* op,
                             std::index_sequence<K...>) {
  constexpr int N = int(sizeof...(Ins)) + 1;
  if (p.numel == 0) return;
  LaunchOn on(p.device);
  Out* out = reinterpret_cast<Out*>(p.data[0]);
  constexpr int V = 16 / widest<Out, Ins...>();
  const bool vec_aligned =
      reinterpret_cast<uintptr_t>(p.data[0]) % (sizeof(Out) * V) == 0 &&
      ((reinterpret_cast<uintptr_t>(p.data[K + 1]) % (sizeof(Ins) * V) == 0) && ...);
  if (p.contiguous && vec_aligned) {
    contiguous_kernel<V, Out, F, Ins...><<<grid_for(p.numel, V), kThreads, 0, on.stream>>>(
        p.numel, f, out, reinterpret_cast<const Ins*>(p.data[K + 1])...);
  } else if (p.fits_int32) {
    strided_kernel<int32_t, Out, F, Ins...><<<grid_for(p.numel), kThreads, 0, on.stream>>>(
        p.numel, make_offsets<int32_t, N>(p), f, out,
        reinterpret_cast<const Ins*>(p.data[K + 1])...);
  } else {
    strided_kernel<int64_t, Out, F, Ins...><<<grid_for(p.numel), kThreads, 0, on.stream>>>(
        p.numel, make_offsets<int64_t, N>(p), f, out,
        reinterpret_cast<const Ins*>(p.data[K + 1])...);
  }
  IGNIS_CUDA_CHECK_LAUNCH(op);
}

/// out (plan operand 0, of type Out) = f(operands 1.. of types Ins...) on the plan's device,
/// on its current stream.
template <class Out, class... Ins, class F>
void launch_elementwise(const ElementwisePlan& p, const F& f, const char* op) {
  launch_elementwise_impl<Out, Ins...>(p, f, op, std::index_sequence_for<Ins...>{});
}

}  // namespace ignis::cuda::detail
