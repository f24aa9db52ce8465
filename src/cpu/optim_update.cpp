// CPU kernels of the fused optimizer updates (src/ops/optim_kernels.h). Each element is
// independent; chunks of the parameter go to the threads.
#include "core/parallel.h"
#include "cpu/loops.h"
#include "kernels/sgd_math.h"
#include "ops/optim_kernels.h"

namespace ignis::cpu {
namespace {
using detail::SgdUpdateArgs;

// The options are template parameters so each variant's loop has no branches and
// vectorises (with them as runtime tests, the loop ran scalar at ~1 ns per element).
// The rule itself is src/kernels/sgd_math.h, shared with the CUDA kernel.
template <class T, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_loop(const SgdUpdateArgs& a, int64_t begin, int64_t end) {
  T* __restrict p = static_cast<T*>(a.param);
  const T* __restrict g = static_cast<const T*>(a.grad);
  T* __restrict buf = static_cast<T*>(a.momentum_buffer);
  const kernels::SgdConstants<T> k{T(-a.lr), T(a.momentum), T(1 - a.dampening),
                                   T(a.weight_decay), a.maximize ? T(-1) : T(1)};
  for (int64_t i = begin; i < end; ++i) {
    T b{};
    if constexpr (kMomentum && !kFirst) b = buf[i];
    kernels::sgd_step<T, kDecay, kMomentum, kFirst, kNesterov>(p[i], g[i], b, k);
    if constexpr (kMomentum) buf[i] = b;
  }
}

template <class T>
void sgd_rows(const SgdUpdateArgs& a) {
  using Loop = void (*)(const SgdUpdateArgs&, int64_t, int64_t);
  auto pick = [&]<bool kDecay>() -> Loop {
    if (!a.momentum_buffer) return &sgd_loop<T, kDecay, false, false, false>;
    if (a.first)
      return a.nesterov ? &sgd_loop<T, kDecay, true, true, true> : &sgd_loop<T, kDecay, true, true, false>;
    return a.nesterov ? &sgd_loop<T, kDecay, true, false, true> : &sgd_loop<T, kDecay, true, false, false>;
  };
  const Loop loop = a.weight_decay != 0 ? pick.template operator()<true>() : pick.template operator()<false>();
  detail::parallel_for(0, a.n, detail::kGrainSize,
                       [&](int64_t begin, int64_t end) { loop(a, begin, end); });
}

void sgd_update(const SgdUpdateArgs& a) {
  visit_float_or_double(a.dtype, [&]<class T>() { sgd_rows<T>(a); });
}
}  // namespace

void register_optim_cpu() { detail::sgd_update_kernel.set(DeviceType::CPU, &sgd_update); }

}  // namespace ignis::cpu
