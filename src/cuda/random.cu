// CUDA random fills, the twin of src/cpu/random.cpp: element i takes value i % K of Philox
// block offset + i / K (K values per block), computed by kernels/philox.h, so the same seed
// and shape give the same values on both devices — bit for bit, because this file is
// compiled without FMA contraction and cpu/random.cpp with -ffp-contract=off
// (Note [Bit-identical random streams] in src/CMakeLists.txt). A thread computes one block
// and stores its K values.
#include "cuda/launch.cuh"
#include "kernels/convert.h"
#include "kernels/philox.h"
#include "ops/random_kernels.h"

namespace ignis::cuda::detail {
namespace {
namespace ph = kernels::philox;
using ignis::detail::RandomDist;
using ignis::detail::RandomFillArgs;
using kernels::convert;

/// Where element i of operands 0 (the output) and 1 (p, if any) live.
struct Layout2 {
  bool contiguous;
  Offsets<int64_t, 2> offs;
  __device__ __forceinline__ void at(int64_t i, int64_t& o0, int64_t& o1) const {
    if (contiguous) {
      o0 = o1 = i;
      return;
    }
    int64_t off[2];
    offs.at(i, off);
    o0 = off[0];
    o1 = off[1];
  }
};

template <class T, class V, class Dist, class ToOut>
__global__ void random_blocks(int64_t n, Dist dist, ToOut to_out, uint64_t seed, uint64_t offset,
                              T* out, const T* p, Layout2 layout) {
  constexpr int K = Dist::kPerBlock;
  const int64_t nblocks = (n + K - 1) / K;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < nblocks;
       k += int64_t(gridDim.x) * blockDim.x) {
    V vals[K];
    dist.values(ph::block_words(seed, offset + uint64_t(k)), vals);
#pragma unroll
    for (int l = 0; l < K; ++l) {
      const int64_t i = k * K + l;
      if (i >= n) break;
      int64_t o0, o1;
      layout.at(i, o0, o1);
      out[o0] = to_out(vals[l], p ? p + o1 : nullptr);
    }
  }
}

/// A uniform that rounds up to `to` when stored becomes `from` (as the CPU kernel).
template <class T>
struct UniformOut {
  double from, to;
  __device__ T operator()(double v, const T*) const {
    const T r = convert<T>(v);
    return double(convert<double>(r)) >= to && to > from ? convert<T>(from) : r;
  }
};
template <class T>
struct PlainOut {
  template <class V>
  __device__ T operator()(V v, const T*) const { return convert<T>(v); }
};
template <class T>
struct BernoulliOut {
  double prob;
  __device__ T operator()(double u, const T*) const { return convert<T>(u < prob); }
};
template <class T>
struct BernoulliTensorOut {  // NaN p gives 0
  __device__ T operator()(double u, const T* p) const {
    return convert<T>(u < double(convert<double>(*p)));
  }
};

template <class T, class V, class Dist, class ToOut>
void launch(const ElementwisePlan& p, const RandomFillArgs& a, const Dist& dist,
            const ToOut& to_out) {
  LaunchOn on(p.device);
  Layout2 layout{p.contiguous, make_offsets<int64_t, 2>(p)};
  if (p.noperands < 2)  // only the output: its offsets serve both slots
    for (int d = 0; d < p.ndim; ++d) layout.offs.strides[1][d] = p.strides[0][d];
  const T* prob = p.noperands > 1 ? reinterpret_cast<const T*>(p.data[1]) : nullptr;
  const int64_t nblocks = (p.numel + Dist::kPerBlock - 1) / Dist::kPerBlock;
  random_blocks<T, V><<<grid_for(nblocks), kThreads, 0, on.stream>>>(
      p.numel, dist, to_out, a.seed, a.offset, reinterpret_cast<T*>(p.data[0]), prob, layout);
  IGNIS_CUDA_CHECK_LAUNCH("random");
}

template <class T>
void random_fill_typed(const ElementwisePlan& p, const RandomFillArgs& a) {
  if constexpr (kernels::is_floating_v<T>) {
    if (a.dist == RandomDist::Uniform) {
      if constexpr (std::is_same_v<T, double>) {
        launch<T, double>(p, a, ph::Uniform53{a.a, a.b}, UniformOut<T>{a.a, a.b});
      } else {
        const int bits = std::is_same_v<T, float> ? 24 : std::is_same_v<T, Half> ? 11 : 8;
        launch<T, double>(p, a, ph::UniformFloat{a.a, a.b, bits}, UniformOut<T>{a.a, a.b});
      }
      return;
    }
    if (a.dist == RandomDist::Normal) {
      launch<T, double>(p, a, ph::Normal{a.a, a.b}, PlainOut<T>{});
      return;
    }
    if (a.dist == RandomDist::BernoulliTensor) {
      launch<T, double>(p, a, ph::BernoulliUniform{}, BernoulliTensorOut<T>{});
      return;
    }
  }
  if (a.dist == RandomDist::RandInt) {
    launch<T, int64_t>(p, a, ph::RandInt{a.low, a.range}, PlainOut<T>{});
  } else if (a.dist == RandomDist::Bernoulli) {
    launch<T, double>(p, a, ph::BernoulliUniform{}, BernoulliOut<T>{a.a});
  }
  // Other (distribution, dtype) pairs are rejected by the front end.
}

void random_fill_kernel(const ElementwisePlan& p, const RandomFillArgs& a) {
  if (p.numel == 0) return;
  visit_dtype(p.dtypes[0], [&]<class T>() { random_fill_typed<T>(p, a); });
}
}  // namespace

void register_random() {
  ignis::detail::random_fill_kernel.set(DeviceType::CUDA, &random_fill_kernel);
}

}  // namespace ignis::cuda::detail
