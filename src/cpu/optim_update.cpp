// CPU kernels of the fused optimizer updates and of GradScaler's unscale
// (src/ops/optim_kernels.h). Each element is independent; chunks go to the threads.
#include <atomic>
#include <type_traits>

#include "core/parallel.h"
#include "cpu/loops.h"
#include "kernels/sgd_math.h"
#include "ops/optim_kernels.h"

namespace ignis::cpu {
namespace {
using detail::SgdUpdateArgs;
using detail::UnscaleArgs;

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

/// One tensor of the unscale pass; returns whether any element was inf or NaN. The check
/// sums g * 0, which is 0 for finite g and NaN otherwise, so the loop stays branch-free and
/// vectorises; it looks at g before scaling, as PyTorch does.
template <class T>
bool unscale_tensor(T* data, int64_t n, float inv_scale) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const C inv = C(inv_scale);
  std::atomic<bool> found{false};
  detail::parallel_for(0, n, detail::kGrainSize, [&](int64_t begin, int64_t end) {
    C probe = 0;
    for (int64_t i = begin; i < end; ++i) {
      const C g = C(data[i]);
      probe += g * C(0);
      data[i] = T(g * inv);
    }
    if (probe != probe) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

bool unscale(const UnscaleArgs& a) {
  bool found = false;
  auto each = [&]<class T>() {
    for (size_t i = 0; i < a.data.size(); ++i)
      found |= unscale_tensor(static_cast<T*>(a.data[i]), a.numel[i], a.inv_scale);
  };
  switch (a.dtype) {
    case DType::Float32: each.template operator()<float>(); break;
    case DType::Float64: each.template operator()<double>(); break;
    case DType::BFloat16: each.template operator()<BFloat16>(); break;
    case DType::Float16: each.template operator()<Half>(); break;
    default:
      throw DTypeError(fmt::format("[grad_scaler_unscale] expected floating gradients, got {}",
                                   dtype_name(a.dtype)));
  }
  return found;
}
}  // namespace

void register_optim_cpu() {
  detail::sgd_update_kernel.set(DeviceType::CPU, &sgd_update);
  detail::unscale_kernel.set(DeviceType::CPU, &unscale);
}

}  // namespace ignis::cpu
