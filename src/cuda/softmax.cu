// CUDA softmax / log_softmax over a contiguous tensor seen as (outer, dim, inner), the twin
// of src/cpu/softmax.cpp: the max, the sum of exp(x - max) accumulated in double, then the
// scaling (or the subtraction of log(sum)), in the compute type (float for 16-bit types).
//   inner == 1 (the common case, softmax over the last dim): a team of threads per row (a
//     warp for rows up to 1024, the whole block beyond), all-reduced with shuffles.
//   inner > 1: a thread per (outer, column) walks the dim; neighbouring threads read
//     neighbouring columns, so the loads coalesce.
#include "core/error.h"
#include "cuda/launch.cuh"
#include "kernels/convert.h"
#include "ops/reduce_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::SoftmaxArgs;
using kernels::opmath_t;

template <class C>
__device__ __forceinline__ C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) return expf(x);
  else return ::exp(x);
}

struct MaxF {
  template <class V>
  __device__ V operator()(V a, V b) const { return b > a ? b : a; }
};
struct SumF {
  template <class V>
  __device__ V operator()(V a, V b) const { return a + b; }
};

/// v combined over the team (32 threads, or the whole block), returned to every thread.
/// Every thread of the block must call it.
template <class V, class F>
__device__ V team_allreduce(V v, int team, F f) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = f(v, __shfl_xor_sync(0xffffffffu, v, d));
  if (team <= 32) return v;
  __shared__ V partial[kThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial may still be read by the previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  V r = partial[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w) r = f(r, partial[w]);
  return r;
}

template <class T, bool kLog>
__global__ void softmax_rows(const T* in, T* out, int64_t rows, int64_t D, int team) {
  using C = opmath_t<T>;
  const int64_t row = blockIdx.x * int64_t(blockDim.x / team) + threadIdx.x / team;
  const int lane = threadIdx.x % team;
  const bool active = row < rows;  // inactive threads still join the reductions
  const T* x = in + (active ? row : 0) * D;
  C m = -INFINITY;
  if (active)
    for (int64_t k = lane; k < D; k += team) m = MaxF{}(m, C(x[k]));
  m = team_allreduce(m, team, MaxF{});
  double s = 0;
  if (active)
    for (int64_t k = lane; k < D; k += team) s += double(exp_c<C>(C(x[k]) - m));
  s = team_allreduce(s, team, SumF{});
  if (!active) return;
  T* y = out + row * D;
  if constexpr (kLog) {
    const C shift = C(::log(s));
    for (int64_t k = lane; k < D; k += team) y[k] = T((C(x[k]) - m) - shift);
  } else {
    const C scale = C(1.0 / s);
    for (int64_t k = lane; k < D; k += team) y[k] = T(exp_c<C>(C(x[k]) - m) * scale);
  }
}

template <class T, bool kLog>
__global__ void softmax_columns(const T* in, T* out, int64_t outer, int64_t D, int64_t inner) {
  using C = opmath_t<T>;
  const int64_t n = outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / inner, c = t % inner;
    const T* x = in + o * D * inner + c;
    T* y = out + o * D * inner + c;
    C m = -INFINITY;
    for (int64_t d = 0; d < D; ++d) m = MaxF{}(m, C(x[d * inner]));
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += double(exp_c<C>(C(x[d * inner]) - m));
    if constexpr (kLog) {
      const C shift = C(::log(s));
      for (int64_t d = 0; d < D; ++d) y[d * inner] = T((C(x[d * inner]) - m) - shift);
    } else {
      const C scale = C(1.0 / s);
      for (int64_t d = 0; d < D; ++d) y[d * inner] = T(exp_c<C>(C(x[d * inner]) - m) * scale);
    }
  }
}

template <class T, bool kLog>
void run(const SoftmaxArgs& a) {
  LaunchOn on(a.device);
  const T* in = reinterpret_cast<const T*>(a.in);
  T* out = reinterpret_cast<T*>(a.out);
  if (a.inner == 1) {
    const int team = a.dim > 1024 ? kThreads : 32;
    const int64_t per_block = kThreads / team;
    const unsigned blocks = blocks_for_rows(a.outer, per_block, kLog ? "log_softmax" : "softmax");
    softmax_rows<T, kLog><<<blocks, kThreads, 0, on.stream>>>(in, out, a.outer, a.dim, team);
  } else {
    softmax_columns<T, kLog><<<grid_for(a.outer * a.inner), kThreads, 0, on.stream>>>(
        in, out, a.outer, a.dim, a.inner);
  }
  IGNIS_CUDA_CHECK_LAUNCH(kLog ? "log_softmax" : "softmax");
}

void softmax_kernel(const SoftmaxArgs& a) {
  // The CUDA cross-entropy reduces its rows itself (loss_optim.cu); only the CPU's uses lse.
  IGNIS_CHECK(!a.lse, NotImplementedError, "[softmax] log-sum-exps are written on the CPU only");
  if (a.outer * a.inner * a.dim == 0) return;
  visit_dtype(a.dtype, [&]<class T>() {
    if constexpr (kernels::is_floating_v<T>) {
      if (a.log) run<T, true>(a);
      else run<T, false>(a);
    } else {
      throw DTypeError(std::string("[softmax] expected a floating tensor, got ") +
                       dtype_name(a.dtype));
    }
  });
}
}  // namespace

void register_softmax() { ignis::detail::softmax_kernel.set(DeviceType::CUDA, &softmax_kernel); }

}  // namespace ignis::cuda::detail
