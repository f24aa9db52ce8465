// Multi-tensor CUDA kernels: the optimizers' fused updates (multi_tensor_update_kernel),
// GradScaler's unscale with its inf/NaN check (unscale_kernel) and that check alone
// (non_finite_check_kernel, for all_finite), slots of src/ops/optim_kernels.h. One launch
// covers many tensors: the launch's argument is a table of up to kMaxTensors tensors and up to
// kMaxBlocks chunks of kChunk elements; block b updates chunk block_chunk[b] of tensor
// block_tensor[b]. A list larger than one table takes several launches (a tensor cut between
// two tables appears in both, each with its own chunks).
//
// The per-element rules are src/kernels/sgd_math.h and optim_math.h, which the CPU loops
// (src/cpu/optim_update.cpp) run too; this file is compiled with --fmad=false and that one
// with -ffp-contract=off, so the two give the same bits in float32 (sqrt and division are
// IEEE-rounded on both). Step values (learning rate, bias corrections) are read from device
// memory in float64 and rounded once in the kernels, as the CPU rounds them. Inside a CUDA
// graph capture SGD's launch is captured, reading {lr, momentum} from device memory that a
// replay hook refreshes (src/optim/multi_tensor_update.cpp), and so is all_finite's check;
// the other optimizers refuse.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstdint>

#include "core/error.h"
#include "cuda/launch.cuh"
#include "cuda/nn_common.cuh"
#include "ignis/ops.h"
#include "kernels/optim_math.h"
#include "kernels/sgd_math.h"
#include "ops/optim_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::MultiTensorItem;
using ignis::detail::MultiTensorUpdateArgs;
using ignis::detail::NonFiniteCheckArgs;
using ignis::detail::OptimRule;
using ignis::detail::UnscaleArgs;

constexpr int kMaxTensors = 32;
constexpr int kMaxBlocks = 320;
constexpr int64_t kChunk = 64 * 1024;

/// Which chunk of which tensor each block of a launch works on.
struct ChunkMap {
  int64_t n[kMaxTensors];
  uint8_t block_tensor[kMaxBlocks];
  int32_t block_chunk[kMaxBlocks];
};

/// Fills ChunkMaps over a list of tensor sizes and launches one kernel per full map: add(i)
/// for each tensor i of the list (add_tensor puts its pointers at a slot), then finish().
/// `launch(blocks)` runs the kernel for the map's first `blocks` blocks.
template <class AddTensor, class Launch>
void for_each_launch(
    const std::vector<int64_t>& sizes, ChunkMap& map, AddTensor add_tensor, Launch launch) {
  int tensors = 0, blocks = 0;
  auto flush = [&] {
    if (blocks > 0) launch(blocks);
    tensors = blocks = 0;
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) continue;
    if (tensors == kMaxTensors) flush();
    add_tensor(tensors, i);
    map.n[tensors] = sizes[i];
    const int64_t chunks = (sizes[i] + kChunk - 1) / kChunk;
    for (int64_t c = 0; c < chunks; ++c) {
      if (blocks == kMaxBlocks) {  // the map is full: run it, carry this tensor to slot 0
        flush();
        add_tensor(0, i);
        map.n[0] = sizes[i];
      }
      map.block_tensor[blocks] = uint8_t(tensors);
      map.block_chunk[blocks] = int32_t(c);
      ++blocks;
    }
    ++tensors;
  }
  flush();
}

/// The element range of this block's chunk within its tensor.
struct ChunkRange {
  int t;
  int64_t begin, end;
};

__device__ __forceinline__ ChunkRange chunk_range(const ChunkMap& map) {
  const int t = map.block_tensor[blockIdx.x];
  const int64_t begin = int64_t(map.block_chunk[blockIdx.x]) * kChunk;
  const int64_t end = begin + kChunk < map.n[t] ? begin + kChunk : map.n[t];
  return {t, begin, end};
}

// ---- optimizer updates ------------------------------------------------------------------

/// A launch's tensors (MultiTensorItem's fields, by slot) and the rule's fixed options.
struct UpdateTable {
  ChunkMap map;
  float* param[kMaxTensors];
  const float* grad[kMaxTensors];
  float* state[3][kMaxTensors];
  const double* scalars[kMaxTensors];
  bool first[kMaxTensors];
};

struct UpdateConstants {
  kernels::SgdConstants<float> sgd;
  kernels::AdamConstants<float> adam;
  kernels::RmspropConstants<float> rmsprop;
};

/// One block per chunk; the SGD options that select a variant of its rule are template
/// parameters (unused by the other rules, whose options are uniform branches).
template <OptimRule kRule, bool kDecay, bool kMomentum, bool kNesterov>
__global__ void multi_tensor_update_chunks(const UpdateTable tab, const UpdateConstants c) {
  const ChunkRange r = chunk_range(tab.map);
  float* __restrict__ p = tab.param[r.t];
  const float* __restrict__ g = tab.grad[r.t];
  float* __restrict__ s0 = tab.state[0][r.t];
  float* __restrict__ s1 = tab.state[1][r.t];
  float* __restrict__ s2 = tab.state[2][r.t];
  const double* scalars = tab.scalars[r.t];
  if constexpr (kRule == OptimRule::sgd) {
    // lr and momentum of this step (a captured graph's replays refresh them on the device).
    const kernels::SgdConstants<float> k = kernels::with_device_values(c.sgd, scalars);
    const bool first = tab.first[r.t];
    for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
      float pi = p[i], b = 0;
      if constexpr (!kMomentum) {
        kernels::sgd_step<float, kDecay, false, false, false>(pi, g[i], b, k);
      } else if (first) {
        kernels::sgd_step<float, kDecay, true, true, kNesterov>(pi, g[i], b, k);
        s0[i] = b;
      } else {
        b = s0[i];
        kernels::sgd_step<float, kDecay, true, false, kNesterov>(pi, g[i], b, k);
        s0[i] = b;
      }
      p[i] = pi;
    }
  } else if constexpr (kRule == OptimRule::adam) {
    const kernels::AdamStep<float> s = kernels::adam_step_from<float>(scalars);
    for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
      float pi = p[i], m = s0[i], v = s1[i], vmax = c.adam.amsgrad ? s2[i] : 0.0f;
      kernels::adam_step(pi, g[i], m, v, vmax, c.adam, s);
      p[i] = pi;
      s0[i] = m;
      s1[i] = v;
      if (c.adam.amsgrad) s2[i] = vmax;
    }
  } else {
    const float neg_lr = kernels::neg_lr_from<float>(scalars);
    const kernels::RmspropConstants<float>& k = c.rmsprop;
    for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
      float pi = p[i], sq = s0[i], ga = k.centered ? s1[i] : 0.0f;
      float buf = k.use_momentum ? s2[i] : 0.0f;
      kernels::rmsprop_step(pi, g[i], sq, ga, buf, k, neg_lr);
      p[i] = pi;
      s0[i] = sq;
      if (k.centered) s1[i] = ga;
      if (k.use_momentum) s2[i] = buf;
    }
  }
}

using UpdateLaunch = void (*)(const UpdateTable&, const UpdateConstants&, int, cudaStream_t);

template <OptimRule kRule, bool kDecay = false, bool kMomentum = false, bool kNesterov = false>
void launch_update(const UpdateTable& tab, const UpdateConstants& c, int blocks, cudaStream_t s) {
  multi_tensor_update_chunks<kRule, kDecay, kMomentum, kNesterov>
      <<<blocks, kThreads, 0, s>>>(tab, c);
}

template <bool kDecay>
UpdateLaunch sgd_launch(const MultiTensorUpdateArgs& a) {
  if (!a.sgd_momentum) return &launch_update<OptimRule::sgd, kDecay, false, false>;
  return a.sgd_nesterov ? &launch_update<OptimRule::sgd, kDecay, true, true>
                        : &launch_update<OptimRule::sgd, kDecay, true, false>;
}

UpdateLaunch pick_update(const MultiTensorUpdateArgs& a) {
  switch (a.rule) {
    case OptimRule::sgd:
      return a.sgd_decay ? sgd_launch<true>(a) : sgd_launch<false>(a);
    case OptimRule::adam:
      return &launch_update<OptimRule::adam>;
    case OptimRule::rmsprop:
      return &launch_update<OptimRule::rmsprop>;
  }
  return nullptr;
}

/// The device of the first of `count` tensors with elements (an empty one may have no data
/// pointer); ptr(i) and numel(i) describe tensor i.
template <class Ptr, class Numel>
int device_of_first(size_t count, const Ptr& ptr, const Numel& numel, const char* op) {
  size_t i = 0;
  while (i + 1 < count && numel(i) == 0) ++i;
  return device_of(ptr(i), op);
}

void multi_tensor_update(const MultiTensorUpdateArgs& a) {
  if (a.items.empty()) return;
  LaunchOn on(Device::cuda(device_of_first(
      a.items.size(), [&](size_t i) { return a.items[i].param; },
      [&](size_t i) { return a.items[i].n; }, "multi_tensor_update")));
  const UpdateLaunch launch = pick_update(a);
  const UpdateConstants c{a.sgd, a.adam, a.rmsprop};
  std::vector<int64_t> sizes;
  for (const MultiTensorItem& it : a.items) sizes.push_back(it.n);
  UpdateTable tab{};
  for_each_launch(
      sizes,
      tab.map,
      [&](int slot, size_t i) {
        const MultiTensorItem& it = a.items[i];
        tab.param[slot] = it.param;
        tab.grad[slot] = it.grad;
        for (int k = 0; k < 3; ++k) tab.state[k][slot] = it.state[k];
        tab.scalars[slot] = it.scalars;
        tab.first[slot] = it.first;
      },
      [&](int blocks) { launch(tab, c, blocks, on.stream); });
  IGNIS_CUDA_CHECK_LAUNCH("multi_tensor_update");
}

// ---- GradScaler's unscale ------------------------------------------------------------------

struct UnscaleTable {
  ChunkMap map;
  void* data[kMaxTensors];
};

/// g *= *inv_scale in g's compute type, and *found_inf = 1 when any g (before scaling) is
/// inf or NaN. Every writer stores the same value, so the race on the flag is benign.
template <class T>
__global__ void unscale_chunks(const UnscaleTable tab, const float* inv_scale, float* found_inf) {
  using C = kernels::opmath_t<T>;
  const ChunkRange r = chunk_range(tab.map);
  T* __restrict__ x = static_cast<T*>(tab.data[r.t]);
  const C inv = C(*inv_scale);
  bool bad = false;
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    const C g = C(x[i]);
    bad |= !(g * C(0) == C(0));  // g * 0 is NaN exactly when g is inf or NaN
    x[i] = T(g * inv);
  }
  if (bad) *found_inf = 1.0f;
}

/// Unscales the list with the factor and flag in device memory (flag[0] = found_inf,
/// flag[1] = inv_scale), without waiting.
template <class T>
void launch_unscale(const UnscaleArgs& a, float* flag, cudaStream_t stream) {
  UnscaleTable tab{};
  for_each_launch(
      a.numel,
      tab.map,
      [&](int slot, size_t i) { tab.data[slot] = a.data[i]; },
      [&](int blocks) { unscale_chunks<T><<<blocks, kThreads, 0, stream>>>(tab, flag + 1, flag); });
}

bool unscale(const UnscaleArgs& a) {
  if (a.data.empty()) return false;
  const int d = device_of_first(
      a.data.size(), [&](size_t i) { return a.data[i]; }, [&](size_t i) { return a.numel[i]; },
      "grad_scaler_unscale");
  // {found_inf = 0, inv_scale} on the device, copied from pinned memory without a wait; the
  // one wait is the read of the flag at the end (the slot returns it).
  Tensor flag = tensor(std::vector<float>{0.0f, a.inv_scale})
                    .pin_memory()
                    .to(Device::cuda(d), /*non_blocking=*/true);
  {
    LaunchOn on(Device::cuda(d));
    float* f = flag.data_ptr<float>();
    ignis::detail::visit_floating_dtype(a.dtype, "grad_scaler_unscale", [&]<class T>() {
      launch_unscale<T>(a, f, on.stream);
    });
    IGNIS_CUDA_CHECK_LAUNCH("grad_scaler_unscale");
  }
  return flag.narrow(0, 0, 1).item<float>() != 0;
}

// ---- all_finite's check --------------------------------------------------------------------

struct CheckTable {
  ChunkMap map;
  const void* data[kMaxTensors];
};

/// *finite = false when any element is inf or NaN (g - g is NaN exactly then); reads only. As
/// in unscale_chunks, every writer stores the same value.
template <class T>
__global__ void non_finite_check_chunks(const CheckTable tab, bool* finite) {
  using C = kernels::opmath_t<T>;
  const ChunkRange r = chunk_range(tab.map);
  const T* __restrict__ x = static_cast<const T*>(tab.data[r.t]);
  bool bad = false;
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    const C g = C(x[i]);
    bad |= !(g - g == C(0));
  }
  if (bad) *finite = false;
}

template <class T>
void launch_non_finite_check(const NonFiniteCheckArgs& a, cudaStream_t stream) {
  CheckTable tab{};
  for_each_launch(
      a.numel,
      tab.map,
      [&](int slot, size_t i) { tab.data[slot] = a.data[i]; },
      [&](int blocks) {
        non_finite_check_chunks<T><<<blocks, kThreads, 0, stream>>>(tab, a.finite);
      });
}

void non_finite_check(const NonFiniteCheckArgs& a) {
  if (a.data.empty()) return;
  // The flag's device: the tensors' (the front end checked that they share it).
  LaunchOn on(Device::cuda(device_of(a.finite, "all_finite")));
  ignis::detail::visit_floating_dtype(a.dtype, "all_finite", [&]<class T>() {
    launch_non_finite_check<T>(a, on.stream);
  });
  IGNIS_CUDA_CHECK_LAUNCH("all_finite");
}

}  // namespace

void register_multi_tensor_optim() {
  ignis::detail::multi_tensor_update_kernel.set(DeviceType::CUDA, &multi_tensor_update);
  ignis::detail::unscale_kernel.set(DeviceType::CUDA, &unscale);
  ignis::detail::non_finite_check_kernel.set(DeviceType::CUDA, &non_finite_check);
}

}  // namespace ignis::cuda::detail
