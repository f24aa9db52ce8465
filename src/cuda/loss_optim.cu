// CUDA kernels of the fused cross-entropy and the fused SGD update (slots in
// src/ops/loss_kernels.h and src/ops/optim_kernels.h), the twins of src/cpu/cross_entropy.cpp
// and src/cpu/optim_update.cpp; the per-element arithmetic is the shared
// src/kernels/cross_entropy_math.h and src/kernels/sgd_math.h.
//
// Cross-entropy forward: a warp per row (max, exp and the sum of exp in double, the softmax
// kept for backward, the row's loss), then one block sums the rows' losses and weights in
// double. The mean's divisor stays on the device, where the backward reads it, and the first
// out-of-range target is reported after the fact (Note [Deferred kernel errors]), so the
// forward never waits for the GPU.
// SGD reads its learning rate and momentum from the device when given them
// (values_on_device), so a graph replays with the scheduler's current values.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdint>

#include "core/graph_capture.h"
#include "core/tensor_impl.h"
#include "cuda/deferred_errors.h"
#include "cuda/launch.cuh"
#include "cuda/nn_common.cuh"
#include "kernels/cross_entropy_math.h"
#include "kernels/sgd_math.h"
#include "ops/loss_kernels.h"
#include "ops/optim_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::CrossEntropyArgs;
using ignis::detail::CrossEntropyBackward;
using ignis::detail::CrossEntropyForward;
using ignis::detail::LossReduction;
using ignis::detail::SgdUpdateArgs;

template <class T>
__device__ __forceinline__ double weight_at(const T* w, int64_t cls) {
  return w ? double(w[cls]) : 1.0;
}

constexpr int kRowsPerBlock = kThreads / 32;

/// A warp per row: prob = softmax(row), row_loss / row_weight (0 for ignored or bad rows),
/// and the smallest bad row index into *bad (initialised to all ones bits).
template <class T>
__global__ void cross_entropy_rows(
    const T* __restrict__ x,
    const int64_t* __restrict__ target,
    const T* __restrict__ w,
    T* __restrict__ prob,
    double* __restrict__ row_loss,
    double* __restrict__ row_weight,
    unsigned long long* bad,
    int64_t n,
    int64_t c,
    int64_t ignore_index,
    double eps) {
  const int64_t i = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (i >= n) return;  // whole warps leave together
  const T* row = x + i * c;
  T* p = prob + i * c;
  T m = c > 0 ? row[0] : T(0);
  for (int64_t j = lane; j < c; j += 32) m = row[j] > m ? row[j] : m;
  m = warp_max(m);
  double s = 0;
  for (int64_t j = lane; j < c; j += 32) {
    p[j] = T(exp(row[j] - m));  // exp in T (expf for float), summed in double
    s += double(p[j]);
  }
  s = warp_sum(s);
  const T inv = T(1 / s);
  for (int64_t j = lane; j < c; j += 32) p[j] *= inv;
  const double lse = double(m) + log(s);
  const int64_t t = target[i];
  const bool ignored = t == ignore_index, out_of_range = !ignored && (t < 0 || t >= c);
  double smooth = 0;
  if (eps > 0 && !ignored && !out_of_range) {
    for (int64_t j = lane; j < c; j += 32) smooth += weight_at(w, j) * (lse - double(row[j]));
    smooth = warp_sum(smooth);
  }
  if (lane != 0) return;
  if (out_of_range) atomicMin(bad, static_cast<unsigned long long>(i));
  const bool counts = !ignored && !out_of_range;
  row_loss[i] = counts ? kernels::cross_entropy_row_loss(
                             lse, double(row[t]), weight_at(w, t), smooth, eps, double(c))
                       : 0.0;
  row_weight[i] = counts ? weight_at(w, t) : 0.0;
}

/// One block: the reduction of the rows (or their copy for None) and the mean's divisor.
template <class T>
__global__ void __launch_bounds__(1024) cross_entropy_reduce(
    const double* __restrict__ row_loss,
    const double* __restrict__ row_weight,
    T* __restrict__ out,
    double* weight_sum,
    const unsigned long long* bad,
    const int64_t* __restrict__ target,
    KernelReport* report,
    int64_t n,
    LossReduction reduction) {
  double total = 0, wsum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    total += row_loss[i];
    wsum += row_weight[i];
    if (reduction == LossReduction::None) out[i] = T(row_loss[i]);
  }
  total = block_sum(total);
  wsum = block_sum(wsum);
  if (threadIdx.x != 0) return;
  *weight_sum = wsum;
  if (report) {  // the first out-of-range row and its target, read after the fact
    const unsigned long long b = *bad;
    report->value = b == ~0ull ? 0 : static_cast<long long>(target[b]);
    report->index = b;
  }
  if (reduction == LossReduction::Sum) out[0] = T(total);
  if (reduction == LossReduction::Mean) out[0] = T(total / wsum);
}

template <class T>
void forward(CrossEntropyForward& a) {
  const char* op = "cross_entropy";
  const int dev = device_of(a.logits, op);
  IGNIS_CHECK(a.device_stats, Error, "[{}] the CUDA kernel needs device_stats", op);
  LaunchOn on(Device::cuda(dev));
  // Out-of-range targets are reported after the fact (Note [Deferred kernel errors]), except
  // inside a CUDA graph capture, where nothing reports them.
  const bool capturing = ignis::detail::capture_underway();
  // Scratch: row losses and row weights (doubles); the divisor and the bad-row minimum go to
  // the caller's device_stats.
  Tensor scratch = ignis::detail::make_tensor({2 * a.n}, kFloat64, Device::cuda(dev));
  double* row_loss = scratch.data_ptr<double>();
  double* row_weight = row_loss + a.n;
  double* weight_sum = a.device_stats;
  auto* bad = reinterpret_cast<unsigned long long*>(weight_sum + 1);
  IGNIS_CUDA_CHECK(cudaMemsetAsync(bad, 0xff, sizeof(*bad), on.stream), op);
  // Taken after the allocation, and handed back if a launch fails before it is watched: a
  // slot neither watched nor free would be lost for good.
  KernelReport* report = capturing ? nullptr : take_report(dev);
  try {
    if (a.n > 0) {
      const unsigned blocks = blocks_for_rows(a.n, kRowsPerBlock, op);
      cross_entropy_rows<T><<<blocks, kThreads, 0, on.stream>>>(
          static_cast<const T*>(a.logits),
          a.target,
          static_cast<const T*>(a.weight),
          static_cast<T*>(a.prob),
          row_loss,
          row_weight,
          bad,
          a.n,
          a.c,
          a.ignore_index,
          a.label_smoothing);
      IGNIS_CUDA_CHECK_LAUNCH(op);
    }
    cross_entropy_reduce<T><<<1, 1024, 0, on.stream>>>(
        row_loss, row_weight, static_cast<T*>(a.out), weight_sum, bad, a.target, report, a.n,
        a.reduction);
    IGNIS_CUDA_CHECK_LAUNCH(op);
  } catch (...) {
    if (report) release_report(dev, report);
    throw;
  }
  if (report)
    watch_report(dev, report, on.stream, [c = a.c, n = a.n](const KernelReport& r) {
      return fmt::format(
          "[cross_entropy] target {} is out of range for {} classes (row {} of {}; found on the "
          "GPU and reported at the first check after that call)",
          r.value, c, r.index, n);
    });
  // The backward reads the divisor where the kernel left it: no wait for the GPU here.
}

/// w_all = the sum of the class weights (read by the smoothing term only).
template <class T>
__global__ void __launch_bounds__(1024) weight_total(const T* __restrict__ w, int64_t c, double* out) {
  double s = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += double(w[j]);
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

template <class T>
__global__ void cross_entropy_grad_kernel(
    const T* __restrict__ prob,
    const int64_t* __restrict__ target,
    const T* __restrict__ w,
    const T* __restrict__ g,
    const double* w_total,
    T* __restrict__ grad_in,
    int64_t n,
    int64_t c,
    int64_t ignore_index,
    double eps,
    double weight_sum,
    const double* device_weight_sum,
    LossReduction reduction) {
  const double w_all = w ? *w_total : double(c);
  if (device_weight_sum) weight_sum = *device_weight_sum;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n * c;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k / c, j = k % c, t = target[i];
    // An out-of-range target (the forward's deferred report is raised later, or never inside
    // a CUDA graph) counts for nothing, as in the forward, and is never used as an index.
    if (t == ignore_index || t < 0 || t >= c) {
      grad_in[k] = T(0);
      continue;
    }
    const double s = reduction == LossReduction::None   ? double(g[i])
                     : reduction == LossReduction::Mean ? double(g[0]) / weight_sum
                                                        : double(g[0]);
    const auto r = kernels::cross_entropy_row_grad<T>(s, weight_at(w, t), eps, double(c));
    T d = kernels::cross_entropy_grad(r, prob[k], T(w_all), T(weight_at(w, j)), w != nullptr);
    if (j == t) d -= r.hard;
    grad_in[k] = d;
  }
}

template <class T>
void backward(const CrossEntropyBackward& a) {
  const char* op = "cross_entropy_backward";
  const int dev = device_of(a.prob, op);
  LaunchOn on(Device::cuda(dev));
  const T* w = static_cast<const T*>(a.weight);
  Tensor w_total = ignis::detail::make_tensor({1}, kFloat64, Device::cuda(dev));
  if (w) {
    weight_total<T><<<1, 1024, 0, on.stream>>>(w, a.c, w_total.data_ptr<double>());
    IGNIS_CUDA_CHECK_LAUNCH(op);
  }
  cross_entropy_grad_kernel<T><<<grid_for(a.n * a.c), kThreads, 0, on.stream>>>(
      static_cast<const T*>(a.prob),
      a.target,
      w,
      static_cast<const T*>(a.grad_out),
      w_total.data_ptr<double>(),
      static_cast<T*>(a.grad_in),
      a.n,
      a.c,
      a.ignore_index,
      a.label_smoothing,
      a.weight_sum,
      a.device_weight_sum,
      a.reduction);
  IGNIS_CUDA_CHECK_LAUNCH(op);
}

void cross_entropy_forward(CrossEntropyForward& a) {
  visit_float_or_double(a.dtype, [&]<class T>() { forward<T>(a); });
}

void cross_entropy_backward(const CrossEntropyBackward& a) {
  if (a.n * a.c == 0) return;
  visit_float_or_double(a.dtype, [&]<class T>() { backward<T>(a); });
}

// ---- SGD ----------------------------------------------------------------------------------

template <class T, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
__global__ void sgd_kernel(
    T* __restrict__ p,
    const T* __restrict__ g,
    T* __restrict__ buf,
    int64_t n,
    kernels::SgdConstants<T> given,
    const double* values_on_device) {
  const kernels::SgdConstants<T> k = kernels::with_device_values(given, values_on_device);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    T b{};
    if constexpr (kMomentum && !kFirst) b = buf[i];
    T pi = p[i];
    kernels::sgd_step<T, kDecay, kMomentum, kFirst, kNesterov>(pi, g[i], b, k);
    p[i] = pi;
    if constexpr (kMomentum) buf[i] = b;
  }
}

template <class T, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void launch_sgd(const SgdUpdateArgs& a, cudaStream_t stream) {
  const kernels::SgdConstants<T> k{
      T(-a.lr), T(a.momentum), T(1 - a.dampening), T(a.weight_decay), a.maximize ? T(-1) : T(1)};
  sgd_kernel<T, kDecay, kMomentum, kFirst, kNesterov><<<grid_for(a.n, 4), kThreads, 0, stream>>>(
      static_cast<T*>(a.param),
      static_cast<const T*>(a.grad),
      static_cast<T*>(a.momentum_buffer),
      a.n,
      k,
      a.values_on_device);
}

template <class T, bool kDecay>
void sgd_variant(const SgdUpdateArgs& a, cudaStream_t s) {
  if (!a.momentum_buffer) return launch_sgd<T, kDecay, false, false, false>(a, s);
  if (a.first)
    return a.nesterov ? launch_sgd<T, kDecay, true, true, true>(a, s)
                      : launch_sgd<T, kDecay, true, true, false>(a, s);
  return a.nesterov ? launch_sgd<T, kDecay, true, false, true>(a, s)
                    : launch_sgd<T, kDecay, true, false, false>(a, s);
}

void sgd_update(const SgdUpdateArgs& a) {
  if (a.n == 0) return;
  LaunchOn on(Device::cuda(device_of(a.param, "sgd_update")));
  visit_float_or_double(a.dtype, [&]<class T>() {
    if (a.weight_decay != 0)
      sgd_variant<T, true>(a, on.stream);
    else
      sgd_variant<T, false>(a, on.stream);
  });
  IGNIS_CUDA_CHECK_LAUNCH("sgd_update");
}
}  // namespace

void register_loss_optim() {
  ignis::detail::cross_entropy_forward_kernel.set(DeviceType::CUDA, &cross_entropy_forward);
  ignis::detail::cross_entropy_backward_kernel.set(DeviceType::CUDA, &cross_entropy_backward);
  ignis::detail::sgd_update_kernel.set(DeviceType::CUDA, &sgd_update);
}

}  // namespace ignis::cuda::detail
