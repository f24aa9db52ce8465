// CPU kernels of the fused cross-entropy (formulas in src/ops/loss_kernels.h). Rows are
// independent, so both passes split the rows across threads; the forward's per-row losses
// are summed afterwards in row order in double, so the result does not depend on the thread
// count. The forward keeps the softmax, so the backward is one multiply-add per element.
// The per-row formulas are src/kernels/cross_entropy_math.h, shared with the CUDA kernels.
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "cpu/loops.h"
#include "kernels/cross_entropy_math.h"
#include "kernels/fast_math.h"
#include "ops/loss_kernels.h"
#include "ops/reduce_kernels.h"  // the softmax kernel the rows go through

namespace ignis::cpu {
namespace {
using detail::CrossEntropyBackward;
using detail::CrossEntropyForward;
using detail::LossReduction;

bool ignored(const detail::CrossEntropyArgs& a, int64_t i) {
  return a.target[i] == a.ignore_index;
}

template <class T>
double class_weight(const detail::CrossEntropyArgs& a, int64_t cls) {
  return a.weight ? double(static_cast<const T*>(a.weight)[cls]) : 1.0;
}

/// Sum of all class weights (C without a weight): the smoothing term's total mass.
template <class T>
double weight_total(const detail::CrossEntropyArgs& a) {
  double s = 0;
  for (int64_t j = 0; j < a.c; ++j) s += class_weight<T>(a, j);
  return s;
}

/// The softmax of 8 rows of c <= kMaxLaneClasses float classes at once, one row per vector
/// lane, with their log-sum-exps in lse[0..8): a row of a few classes (the MLP's 10) fills no
/// vector, and row after row is one short dependency chain after another (max, exp, sum,
/// divide, log), which left a [64, 10] batch at ~2 us. Exponentials by kernels::fast_exp and
/// summed in double, as the softmax kernel's rows.
constexpr int64_t kLanes = 8, kMaxLaneClasses = 16;
void softmax_8_rows(const float* x, float* p, int64_t c, double* lse) {
  float m[kLanes], e[kMaxLaneClasses][kLanes];
  double s[kLanes] = {};
#pragma omp simd
  for (int64_t r = 0; r < kLanes; ++r) m[r] = x[r * c];
  for (int64_t j = 1; j < c; ++j) {
#pragma omp simd
    for (int64_t r = 0; r < kLanes; ++r) m[r] = x[r * c + j] > m[r] ? x[r * c + j] : m[r];
  }
  for (int64_t j = 0; j < c; ++j) {
#pragma omp simd
    for (int64_t r = 0; r < kLanes; ++r) {
      e[j][r] = kernels::fast_exp(x[r * c + j] - m[r]);
      s[r] += double(e[j][r]);
    }
  }
  float inv[kLanes];
#pragma omp simd
  for (int64_t r = 0; r < kLanes; ++r) inv[r] = float(1 / s[r]);
  for (int64_t r = 0; r < kLanes; ++r) {
    for (int64_t j = 0; j < c; ++j) p[r * c + j] = e[j][r] * inv[r];
    lse[r] = double(m[r]) + std::log(s[r]);
  }
}

/// Every row's softmax into a.prob and its log-sum-exp into lse[0..n): float rows of a few
/// classes eight at a time (softmax_8_rows), the rest by the softmax kernel's row loop, whose
/// passes vectorise along the row (a serial loop here had left [4096, 1000] logits 1.5x
/// behind PyTorch).
template <class T>
void softmax_rows(const CrossEntropyForward& a, double* lse) {
  const T* x = static_cast<const T*>(a.logits);
  T* prob = static_cast<T*>(a.prob);
  int64_t done = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (a.c <= kMaxLaneClasses) {
      const int64_t groups = a.n / kLanes, span = kLanes * a.c;
      detail::parallel_for(
          0, groups, std::max<int64_t>(1, detail::kGrainSize / span), [&](int64_t b, int64_t e) {
            for (int64_t g = b; g < e; ++g)
              softmax_8_rows(x + g * span, prob + g * span, a.c, lse + g * kLanes);
          });
      done = groups * kLanes;
    }
  }
  if (done == a.n) return;
  detail::SoftmaxArgs rest;
  rest.in = reinterpret_cast<const char*>(x + done * a.c);
  rest.out = reinterpret_cast<char*>(prob + done * a.c);
  rest.dtype = a.dtype;
  rest.outer = a.n - done;
  rest.dim = a.c;
  rest.device = Device(DeviceType::CPU);
  rest.lse = lse + done;
  detail::softmax_kernel.get(rest.device)(rest);
}

template <class T>
void forward_rows(CrossEntropyForward& a) {
  const T* x = static_cast<const T*>(a.logits);
  const double eps = a.label_smoothing, C = double(a.c);
  std::vector<double> lse(size_t(a.n)), row_loss(size_t(a.n), 0.0);
  softmax_rows<T>(a, lse.data());
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / (eps > 0 ? a.c : 1));
  detail::parallel_for(0, a.n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (ignored(a, i)) continue;
      const int64_t t = a.target[i];
      if (t < 0 || t >= a.c) continue;  // reported by the caller from bad_row
      const T* row = x + i * a.c;
      const double l = lse[size_t(i)];
      double smooth = 0;
      if (eps > 0)
        for (int64_t j = 0; j < a.c; ++j) smooth += class_weight<T>(a, j) * (l - double(row[j]));
      row_loss[size_t(i)] =
          kernels::cross_entropy_row_loss(l, double(row[t]), class_weight<T>(a, t), smooth, eps, C);
    }
  });
  double total = 0, wsum = 0;
  for (int64_t i = 0; i < a.n; ++i) {
    if (ignored(a, i)) continue;
    const int64_t t = a.target[i];
    if (t < 0 || t >= a.c) {
      a.bad_row = i;
      return;
    }
    total += row_loss[size_t(i)];
    wsum += class_weight<T>(a, t);
  }
  a.weight_sum = wsum;
  T* out = static_cast<T*>(a.out);
  switch (a.reduction) {
    case LossReduction::None:
      for (int64_t i = 0; i < a.n; ++i) out[i] = T(row_loss[size_t(i)]);
      break;
    case LossReduction::Sum: out[0] = T(total); break;
    case LossReduction::Mean: out[0] = T(total / wsum); break;
  }
}

template <class T>
void backward_rows(const CrossEntropyBackward& a) {
  const T* prob = static_cast<const T*>(a.prob);
  const T* g = static_cast<const T*>(a.grad_out);
  T* gi = static_cast<T*>(a.grad_in);
  const double eps = a.label_smoothing, C = double(a.c);
  const double w_all = weight_total<T>(a);
  const double scale = a.reduction == LossReduction::Mean ? double(g[0]) / a.weight_sum
                                                         : double(g[0]);
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(a.c, 1));
  detail::parallel_for(0, a.n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* out = gi + i * a.c;
      if (ignored(a, i)) {
        for (int64_t j = 0; j < a.c; ++j) out[j] = T(0);
        continue;
      }
      const double s = a.reduction == LossReduction::None ? double(g[i]) : scale;
      const T* p = prob + i * a.c;
      const int64_t t = a.target[i];
      const auto r = kernels::cross_entropy_row_grad<T>(s, class_weight<T>(a, t), eps, C);
      if (!a.weight) {
        for (int64_t j = 0; j < a.c; ++j)
          out[j] = kernels::cross_entropy_grad(r, p[j], T(w_all), T(1), false);
      } else {
        for (int64_t j = 0; j < a.c; ++j)
          out[j] = kernels::cross_entropy_grad(r, p[j], T(w_all), T(class_weight<T>(a, j)), true);
      }
      out[t] -= r.hard;
    }
  });
}

void cross_entropy_forward(CrossEntropyForward& a) {
  visit_float_or_double(a.dtype, [&]<class T>() { forward_rows<T>(a); });
}

void cross_entropy_backward(const CrossEntropyBackward& a) {
  visit_float_or_double(a.dtype, [&]<class T>() { backward_rows<T>(a); });
}

}  // namespace

void register_loss_cpu() {
  detail::cross_entropy_forward_kernel.set(DeviceType::CPU, &cross_entropy_forward);
  detail::cross_entropy_backward_kernel.set(DeviceType::CPU, &cross_entropy_backward);
}

}  // namespace ignis::cpu
