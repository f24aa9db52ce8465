// CPU kernels of the fused optimizer updates (per parameter and multi-tensor), of
// GradScaler's unscale and of all_finite's check (src/ops/optim_kernels.h). Each element is
// independent; chunks go to the threads. The multi-tensor rules run the same element math
// as the CUDA kernel.
#include <atomic>
#include <type_traits>

#include "core/parallel.h"
#include "cpu/loops.h"
#include "kernels/optim_math.h"
#include "kernels/sgd_math.h"
#include "ops/optim_kernels.h"

namespace ignis::cpu {
namespace {
using detail::MultiTensorItem;
using detail::MultiTensorUpdateArgs;
using detail::OptimRule;
using detail::SgdUpdateArgs;
using detail::NonFiniteCheckArgs;
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

// ---- multi-tensor updates (float32) ---------------------------------------------------------

template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_item(const MultiTensorItem& it, kernels::SgdConstants<float> k) {
  k = kernels::with_device_values(k, it.scalars);  // lr and momentum of this step
  float* __restrict p = it.param;
  const float* __restrict g = it.grad;
  float* __restrict buf = it.state[0];
  detail::parallel_for(0, it.n, detail::kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float b = 0;
      if constexpr (kMomentum && !kFirst) b = buf[i];
      kernels::sgd_step<float, kDecay, kMomentum, kFirst, kNesterov>(p[i], g[i], b, k);
      if constexpr (kMomentum) buf[i] = b;
    }
  });
}

template <bool kDecay>
void sgd_item_variant(const MultiTensorUpdateArgs& a, const MultiTensorItem& it) {
  if (!a.sgd_momentum) return sgd_item<kDecay, false, false, false>(it, a.sgd);
  if (it.first)
    return a.sgd_nesterov ? sgd_item<kDecay, true, true, true>(it, a.sgd)
                          : sgd_item<kDecay, true, true, false>(it, a.sgd);
  return a.sgd_nesterov ? sgd_item<kDecay, true, false, true>(it, a.sgd)
                        : sgd_item<kDecay, true, false, false>(it, a.sgd);
}

// Adam's and RMSprop's options are template parameters too, and an absent state tensor is
// bound to a fresh local per element: with the options tested at run time and a state bound
// to one local outside the loop (which the loop then seemed to write), the loops ran scalar,
// at 2-3 times the memory's time.
template <bool kL2, bool kDecoupled, bool kAmsgrad>
void adam_item(const MultiTensorUpdateArgs& a, const MultiTensorItem& it) {
  const kernels::AdamStep<float> s = kernels::adam_step_from<float>(it.scalars);
  detail::parallel_for(0, it.n, detail::kGrainSize, [&](int64_t begin, int64_t end) {
    // The flags are set here, in the body the compiler sees as one function, from the
    // template arguments; the other constants are copied so no store can seem to alias them.
    kernels::AdamConstants<float> k = a.adam;
    k.l2 = kL2, k.decoupled = kDecoupled, k.amsgrad = kAmsgrad;
    const kernels::AdamStep<float> step = s;
    float* __restrict p = it.param;
    const float* __restrict g = it.grad;
    float* __restrict m = it.state[0];
    float* __restrict v = it.state[1];
    float* __restrict vmax = it.state[2];
    for (int64_t i = begin; i < end; ++i) {
      float unused = 0;
      kernels::adam_step(p[i], g[i], m[i], v[i], kAmsgrad ? vmax[i] : unused, k, step);
    }
  });
}

void adam_item_variant(const MultiTensorUpdateArgs& a, const MultiTensorItem& it) {
  // adam_step's order: decoupled decay (AdamW) wins over the L2 term.
  const bool ams = a.adam.amsgrad;
  if (a.adam.decoupled)
    return ams ? adam_item<false, true, true>(a, it) : adam_item<false, true, false>(a, it);
  if (a.adam.l2)
    return ams ? adam_item<true, false, true>(a, it) : adam_item<true, false, false>(a, it);
  return ams ? adam_item<false, false, true>(a, it) : adam_item<false, false, false>(a, it);
}

template <bool kL2, bool kCentered, bool kMomentum>
void rmsprop_item(const MultiTensorUpdateArgs& a, const MultiTensorItem& it) {
  const float neg_lr = kernels::neg_lr_from<float>(it.scalars);
  detail::parallel_for(0, it.n, detail::kGrainSize, [&](int64_t begin, int64_t end) {
    kernels::RmspropConstants<float> k = a.rmsprop;  // as in adam_item
    k.l2 = kL2, k.centered = kCentered, k.use_momentum = kMomentum;
    const float lr = neg_lr;
    float* __restrict p = it.param;
    const float* __restrict g = it.grad;
    float* __restrict sq = it.state[0];
    float* __restrict ga = it.state[1];
    float* __restrict buf = it.state[2];
    for (int64_t i = begin; i < end; ++i) {
      float unused_ga = 0, unused_buf = 0;
      kernels::rmsprop_step(
          p[i], g[i], sq[i], kCentered ? ga[i] : unused_ga, kMomentum ? buf[i] : unused_buf, k, lr);
    }
  });
}

void rmsprop_item_variant(const MultiTensorUpdateArgs& a, const MultiTensorItem& it) {
  const auto& r = a.rmsprop;
  auto with_l2 = [&]<bool kL2>() {
    if (r.centered)
      return r.use_momentum ? rmsprop_item<kL2, true, true>(a, it)
                            : rmsprop_item<kL2, true, false>(a, it);
    return r.use_momentum ? rmsprop_item<kL2, false, true>(a, it)
                          : rmsprop_item<kL2, false, false>(a, it);
  };
  if (r.l2)
    with_l2.template operator()<true>();
  else
    with_l2.template operator()<false>();
}

void multi_tensor_update(const MultiTensorUpdateArgs& a) {
  for (const MultiTensorItem& it : a.items) {
    if (it.n == 0) continue;
    switch (a.rule) {
      case OptimRule::sgd:
        if (a.sgd_decay) sgd_item_variant<true>(a, it);
        else sgd_item_variant<false>(a, it);
        break;
      case OptimRule::adam:
        adam_item_variant(a, it);
        break;
      case OptimRule::rmsprop:
        rmsprop_item_variant(a, it);
        break;
    }
  }
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
  detail::visit_floating_dtype(a.dtype, "grad_scaler_unscale", [&]<class T>() {
    for (size_t i = 0; i < a.data.size(); ++i)
      found |= unscale_tensor(static_cast<T*>(a.data[i]), a.numel[i], a.inv_scale);
  });
  return found;
}

/// all_finite's pass, reading only: g - g is NaN exactly when g is inf or NaN. The flags are
/// OR-ed as integers, a reduction the compiler vectorises (a float sum it may not reorder).
template <class T>
bool has_non_finite(const T* data, int64_t n) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  std::atomic<bool> found{false};
  detail::parallel_for(0, n, detail::kGrainSize, [&](int64_t begin, int64_t end) {
    int bad = 0;
    for (int64_t i = begin; i < end; ++i) {
      const C g = C(data[i]);
      bad |= int(!(g - g == C(0)));
    }
    if (bad) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

void non_finite_check(const NonFiniteCheckArgs& a) {
  bool found = false;
  detail::visit_floating_dtype(a.dtype, "all_finite", [&]<class T>() {
    for (size_t i = 0; i < a.data.size() && !found; ++i)
      found = has_non_finite(static_cast<const T*>(a.data[i]), a.numel[i]);
  });
  if (found) *a.finite = false;
}
}  // namespace

void register_optim_cpu() {
  detail::sgd_update_kernel.set(DeviceType::CPU, &sgd_update);
  detail::unscale_kernel.set(DeviceType::CPU, &unscale);
  detail::non_finite_check_kernel.set(DeviceType::CPU, &non_finite_check);
  detail::multi_tensor_update_kernel.set(DeviceType::CPU, &multi_tensor_update);
}

}  // namespace ignis::cpu
