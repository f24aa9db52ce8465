// Device twins of the CPU reduction functors (src/cpu/reduce.cpp), with the same accumulator
// types (double for floating sums, products, norms and moments; wrapping 64-bit integers
// for integer sums) and the same NaN and tie rules, so GPU results match the CPU's up to
// summation order. Each functor: identity(), reduce(acc, x, position) for positions in
// increasing order, combine(acc, other) in any order, write(plan, out offset, acc).
#pragma once

#include "kernels/convert.h"
#include "ops/reduce_kernels.h"

namespace ignis::cuda::detail {

using ignis::detail::ReducePlan;
using kernels::convert;
using kernels::is_floating_v;
using kernels::is_nan;
using kernels::opmath_t;

template <class T>
using WideAcc = std::conditional_t<is_floating_v<T>, double, uint64_t>;
template <class T>
__device__ __forceinline__ WideAcc<T> widen(T x) {
  if constexpr (is_floating_v<T>) return double(opmath_t<T>(x));
  else return uint64_t(int64_t(x));
}
template <class O, class V>
__device__ __forceinline__ void store(const ReducePlan& p, int64_t off, V v) {
  reinterpret_cast<O*>(p.out)[off] = convert<O>(v);
}

template <class T, class O, bool kMean>
struct SumOp {
  using Acc = WideAcc<T>;
  int64_t count = 1;
  __device__ Acc identity() const { return Acc(0); }
  __device__ void reduce(Acc& a, T x, int64_t) const { a += widen(x); }
  __device__ void combine(Acc& a, const Acc& b) const { a += b; }
  __device__ void write(const ReducePlan& p, int64_t off, Acc a) const {
    if constexpr (kMean) store<O>(p, off, a / double(count));
    else if constexpr (std::is_same_v<Acc, uint64_t>) store<O>(p, off, int64_t(a));
    else store<O>(p, off, a);
  }
};

template <class T, class O>
struct ProdOp {
  using Acc = WideAcc<T>;
  __device__ Acc identity() const { return Acc(1); }
  __device__ void reduce(Acc& a, T x, int64_t) const { a *= widen(x); }
  __device__ void combine(Acc& a, const Acc& b) const { a *= b; }
  __device__ void write(const ReducePlan& p, int64_t off, Acc a) const {
    if constexpr (std::is_same_v<Acc, uint64_t>) store<O>(p, off, int64_t(a));
    else store<O>(p, off, a);
  }
};

/// max (kMax) or min; NaN wins.
template <class T, bool kMax>
struct ExtremeOp {
  using Acc = opmath_t<T>;
  __device__ Acc identity() const {
    if constexpr (is_floating_v<T>) return Acc(kMax ? -INFINITY : INFINITY);
    else return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  __device__ static bool takes(Acc x, Acc a) { return (kMax ? x > a : x < a) || is_nan(x); }
  __device__ void reduce(Acc& a, T x, int64_t) const {
    const Acc v = Acc(x);
    a = takes(v, a) ? v : a;
  }
  __device__ void combine(Acc& a, const Acc& b) const { a = takes(b, a) ? b : a; }
  __device__ void write(const ReducePlan& p, int64_t off, Acc a) const { store<T>(p, off, a); }
};

/// Value and index of the max (kMax) or min: the first NaN if any, else the first extreme.
template <class T, bool kMax>
struct ArgExtremeOp {
  using V = opmath_t<T>;
  struct Acc {
    V v;
    int64_t i;  // -1: nothing folded yet
  };
  __device__ Acc identity() const { return {V(0), -1}; }
  __device__ void reduce(Acc& a, T x, int64_t pos) const {
    const V v = V(x);
    if (a.i < 0 || (kMax ? v > a.v : v < a.v) || (is_nan(v) && !is_nan(a.v))) a = {v, pos};
  }
  __device__ void combine(Acc& a, const Acc& b) const {
    if (b.i < 0) return;
    if (a.i < 0) {
      a = b;
      return;
    }
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    bool b_wins;
    if (an || bn) b_wins = bn && (!an || b.i < a.i);
    else b_wins = (kMax ? b.v > a.v : b.v < a.v) || (b.v == a.v && b.i < a.i);
    if (b_wins) a = b;
  }
  __device__ void write(const ReducePlan& p, int64_t off, const Acc& a) const {
    if (p.out) store<T>(p, off, a.v);
    reinterpret_cast<int64_t*>(p.indices)[off] = a.i;
  }
};

/// Welford's running mean and squared deviations, merged with Chan's formula.
template <class T, bool kStd>
struct MomentsOp {
  struct Acc {
    double mean, m2;
    int64_t n;
  };
  double correction = 1;
  __device__ Acc identity() const { return {0, 0, 0}; }
  __device__ void reduce(Acc& a, T x, int64_t) const {
    const double v = double(opmath_t<T>(x));
    a.n += 1;
    const double d = v - a.mean;
    a.mean += d / double(a.n);
    a.m2 += d * (v - a.mean);
  }
  __device__ void combine(Acc& a, const Acc& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    const double na = double(a.n), nb = double(b.n), n = na + nb, d = b.mean - a.mean;
    a.mean += d * nb / n;
    a.m2 += b.m2 + d * d * na * nb / n;
    a.n += b.n;
  }
  __device__ void write(const ReducePlan& p, int64_t off, const Acc& a) const {
    const double var = a.m2 / ::fmax(0.0, double(a.n) - correction);
    store<T>(p, off, kStd ? ::sqrt(var) : var);
  }
};

enum class NormKind { L1, L2, Inf, NegInf, L0, P };

template <class T, NormKind kKind>
struct NormOp {
  using Acc = double;
  double p = 2;
  __device__ Acc identity() const { return kKind == NormKind::NegInf ? INFINITY : 0.0; }
  __device__ void reduce(Acc& a, T x, int64_t) const {
    const double v = ::fabs(double(opmath_t<T>(x)));
    if constexpr (kKind == NormKind::L1) a += v;
    else if constexpr (kKind == NormKind::L2) a += v * v;
    else if constexpr (kKind == NormKind::Inf) a = (v > a || v != v) ? v : a;
    else if constexpr (kKind == NormKind::NegInf) a = (v < a || v != v) ? v : a;
    else if constexpr (kKind == NormKind::L0) a += v != 0 ? 1.0 : 0.0;
    else a += ::pow(v, p);
  }
  __device__ void combine(Acc& a, const Acc& b) const {
    if constexpr (kKind == NormKind::Inf) a = (b > a || b != b) ? b : a;
    else if constexpr (kKind == NormKind::NegInf) a = (b < a || b != b) ? b : a;
    else a += b;
  }
  __device__ void write(const ReducePlan& pl, int64_t off, Acc a) const {
    if constexpr (kKind == NormKind::L2) a = ::sqrt(a);
    else if constexpr (kKind == NormKind::P) a = ::pow(a, 1.0 / p);
    store<T>(pl, off, a);
  }
};

/// all (kAll) / any: non-zero (and NaN) counts as true.
template <class T, bool kAll>
struct LogicalOp {
  using Acc = int32_t;
  __device__ Acc identity() const { return kAll ? 1 : 0; }
  __device__ void reduce(Acc& a, T x, int64_t) const {
    const int32_t t = opmath_t<T>(x) != opmath_t<T>(0);
    a = kAll ? (a & t) : (a | t);
  }
  __device__ void combine(Acc& a, const Acc& b) const { a = kAll ? (a & b) : (a | b); }
  __device__ void write(const ReducePlan& p, int64_t off, Acc a) const {
    reinterpret_cast<bool*>(p.out)[off] = a != 0;
  }
};

/// log(sum(exp(x))) in one pass, rescaling the running sum when the max grows.
template <class T>
struct LogSumExpOp {
  struct Acc {
    double m, s;
  };
  __device__ Acc identity() const { return {-INFINITY, 0}; }
  __device__ static void merge(Acc& a, double m, double s) {
    if (m > a.m) {
      a.s = a.s * ::exp(a.m - m) + s;
      a.m = m;
    } else if (m == a.m) {
      a.s += s;
    } else {
      a.s += s * ::exp(m - a.m);  // NaN m lands here and makes s NaN
    }
  }
  __device__ void reduce(Acc& a, T x, int64_t) const { merge(a, double(opmath_t<T>(x)), 1.0); }
  __device__ void combine(Acc& a, const Acc& b) const {
    if (b.s != 0 || b.m != -INFINITY) merge(a, b.m, b.s);
  }
  __device__ void write(const ReducePlan& p, int64_t off, const Acc& a) const {
    store<T>(p, off, a.s == 0 ? -INFINITY : a.m + ::log(a.s));
  }
};

}  // namespace ignis::cuda::detail
