// The kernel slots of the fused cross-entropy (nn::functional::cross_entropy with class-index
// targets on a [N, C] input): one pass forward (row max, log-sum-exp, the picked and smoothed
// terms, the reduction) and one pass backward (softmax minus the smoothed one-hot, scaled),
// instead of the ~15 ops the composition takes. The formulas, for row i with target t, class
// weights w (all 1 without a weight), smoothing e and p = softmax(x_i):
//   loss_i       = (1 - e) * w_t * (lse_i - x_it) + (e / C) * sum_c w_c * (lse_i - x_ic)
//   dloss_i/dx_ij = (1 - e) * w_t * (p_j - [j == t]) + (e / C) * (sum_c w_c * p_j - w_j)
// Rows whose target is ignore_index contribute 0; the mean divides by the sum of w_t over
// the rows that are not ignored (PyTorch's weighted mean, NaN when that sum is 0).
#pragma once

#include <cstdint>

#include "core/dispatch.h"

namespace ignis::detail {

enum class LossReduction : uint8_t { None, Sum, Mean };

struct CrossEntropyArgs {
  DType dtype = kFloat32;         // of logits, weight, prob, out and grads (float32 / float64)
  int64_t n = 0, c = 0;           // rows, classes
  const int64_t* target = nullptr;  // [n]
  const void* weight = nullptr;     // [c] or null
  int64_t ignore_index = -100;
  double label_smoothing = 0;
  LossReduction reduction = LossReduction::Mean;
};

struct CrossEntropyForward : CrossEntropyArgs {
  const void* logits = nullptr;  // contiguous [n, c]
  void* prob = nullptr;       // out: [n, c] softmax of each row (kept for backward)
  void* out = nullptr;        // out: [n] per-row losses (None) or the one reduced value
  double weight_sum = 0;      // out (CPU): sum of w_t over rows not ignored (the mean's divisor)
  int64_t bad_row = -1;       // out (CPU): first row whose target is out of range, or -1
  // Device kernels: two float64 on the logits' device that receive the divisor and the bad
  // row's bits (~0 for none). A device kernel does not wait for its results: it leaves
  // weight_sum and bad_row unset, the backward reads the divisor from device_stats, and an
  // out-of-range target is raised later by the device (the CUDA backend's Note [Deferred
  // kernel errors]; not at all inside a CUDA graph). Null for the CPU kernel.
  double* device_stats = nullptr;
};

struct CrossEntropyBackward : CrossEntropyArgs {
  const void* prob = nullptr;      // [n, c] from the forward
  const void* grad_out = nullptr;  // [n] (None) or one value
  double weight_sum = 0;           // the forward's
  const double* device_weight_sum = nullptr;  // when set, the divisor is read here instead
  void* grad_in = nullptr;         // out: contiguous [n, c]
};

inline KernelSlot<void (*)(CrossEntropyForward&)> cross_entropy_forward_kernel{
    "cross_entropy"};
inline KernelSlot<void (*)(const CrossEntropyBackward&)> cross_entropy_backward_kernel{
    "cross_entropy_backward"};

}  // namespace ignis::detail
