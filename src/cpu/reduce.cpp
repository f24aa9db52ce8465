// CPU reduction functors (sum, prod, max/min, arg max/min, Welford variance, norms, all/any,
// online logsumexp) and the dispatch from ReduceArgs to the engine of reduce_engine.h.
// Floating sums, products, norms and moments accumulate in double (as PyTorch's CPU acc_type),
// so float32 sums of millions of elements stay accurate; integer ones wrap in 64 bits.
#include <cmath>
#include <limits>
#include <utility>

#include "cpu/reduce_engine.h"
#include "kernels/convert.h"
#include "kernels/fast_math.h"

namespace ignis::cpu {
namespace {
using detail::ReduceArgs;
using detail::ReduceOp;
using kernels::convert;
using kernels::is_floating_v;
using kernels::is_nan;
using kernels::opmath_t;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A floating element widened to double; integers and bool to a wrapping 64-bit integer.
template <class T>
using WideAcc = std::conditional_t<is_floating_v<T>, double, uint64_t>;
template <class T>
inline WideAcc<T> widen(T x) {
  if constexpr (is_floating_v<T>) return double(opmath_t<T>(x));
  else return uint64_t(int64_t(x));
}

/// Stores a value into output element off of the plan's out tensor.
template <class O, class V>
inline void store(const ReducePlan& p, int64_t off, V v) {
  reinterpret_cast<O*>(p.out)[off] = convert<O>(v);
}

/// Lanes of a sum: float partial sums for float32/bfloat16/float16 (folded into the double
/// total every kFoldEvery elements, so the float rounding never builds up), else the total's.
template <class T, class O, bool kMean>
struct SumOp {
  using In = T;
  using Acc = WideAcc<T>;
  using Lane = std::conditional_t<is_floating_v<T>, opmath_t<T>, Acc>;
  static constexpr int64_t kFoldEvery = 32;
  int64_t count = 1;
  Acc identity() const { return Acc(0); }
  void reduce(Acc& a, T x, int64_t) const { a += widen(x); }
  void combine(Acc& a, const Acc& b) const { a += b; }
  void lane_reduce(Lane& l, T x) const {
    if constexpr (is_floating_v<T>) l += Lane(x);
    else l += widen(x);
  }
  void fold(Acc& a, Lane l) const { a += Acc(l); }
  void write(const ReducePlan& p, int64_t off, Acc a) const {
    if constexpr (kMean) store<O>(p, off, a / double(count));
    else if constexpr (std::is_same_v<Acc, uint64_t>) store<O>(p, off, int64_t(a));
    else store<O>(p, off, a);
  }
};

template <class T, class O>
struct ProdOp {
  using In = T;
  using Acc = WideAcc<T>;
  Acc identity() const { return Acc(1); }
  void reduce(Acc& a, T x, int64_t) const { a *= widen(x); }
  void combine(Acc& a, const Acc& b) const { a *= b; }
  void write(const ReducePlan& p, int64_t off, Acc a) const {
    if constexpr (std::is_same_v<Acc, uint64_t>) store<O>(p, off, int64_t(a));
    else store<O>(p, off, a);
  }
};

/// max (kMax) or min; NaN wins.
template <class T, bool kMax>
struct ExtremeOp {
  using In = T;
  using Acc = opmath_t<T>;
  Acc identity() const {
    if constexpr (is_floating_v<T>) return Acc(kMax ? -kInf : kInf);
    else return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  static bool takes(Acc x, Acc a) { return (kMax ? x > a : x < a) || is_nan(x); }
  void reduce(Acc& a, T x, int64_t) const {
    const Acc v = Acc(x);
    a = takes(v, a) ? v : a;
  }
  void combine(Acc& a, const Acc& b) const { a = takes(b, a) ? b : a; }
  void write(const ReducePlan& p, int64_t off, Acc a) const { store<T>(p, off, a); }
};

/// The largest (kMax) or smallest value of a contiguous run of n >= 16 values in V, folded in
/// 16 lanes that vectorise, and whether any of them is NaN (a NaN never becomes the extreme:
/// comparisons with it are false). The first pass of argmax/argmin's and logsumexp's run folds.
template <bool kMax, class V, class T>
[[gnu::always_inline]] inline std::pair<V, bool> run_extreme(const T* x, int64_t n) {
  constexpr int64_t kL = 16;
  auto better = [](V v, V than) { return kMax ? v > than : v < than; };
  V best[kL];
  int nan[kL];
  for (int64_t j = 0; j < kL; ++j) best[j] = V(x[j]), nan[j] = best[j] != best[j];
  int64_t i = kL;
  for (; i + kL <= n; i += kL) {
#pragma omp simd
    for (int64_t j = 0; j < kL; ++j) {
      const V v = V(x[i + j]);
      best[j] = better(v, best[j]) ? v : best[j];
      nan[j] |= v != v;
    }
  }
  V m = best[0];
  int any_nan = 0;
  for (int64_t j = 0; j < kL; ++j) m = better(best[j], m) ? best[j] : m, any_nan |= nan[j];
  for (; i < n; ++i) {
    const V v = V(x[i]);
    m = better(v, m) ? v : m;
    any_nan |= v != v;
  }
  return {m, any_nan != 0};
}

/// Value and index of the max (kMax) or min: the first NaN if any, else the first extreme.
template <class T, bool kMax>
struct ArgExtremeOp {
  using In = T;
  using V = opmath_t<T>;
  struct Acc {
    V v{};
    int64_t i = -1;  // -1: nothing folded yet
  };
  Acc identity() const { return {}; }
  void reduce(Acc& a, T x, int64_t pos) const {
    const V v = V(x);
    // Positions arrive in increasing order, so strict comparison keeps the first extreme.
    if (a.i < 0 || (kMax ? v > a.v : v < a.v) || (is_nan(v) && !is_nan(a.v))) a = {v, pos};
  }
  void combine(Acc& a, const Acc& b) const {
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
  void write(const ReducePlan& p, int64_t off, const Acc& a) const {
    if (p.out) store<T>(p, off, a.v);
    reinterpret_cast<int64_t*>(p.indices)[off] = a.i;
  }
  /// A contiguous run of n >= kRunLanes elements at positions pos, pos + 1, ...: two passes
  /// that vectorise instead of one serial chain of compare-and-select (argmax over rows of
  /// 1000 took 1.5 ns an element). First the extreme value and whether any NaN occurs, then
  /// the first position holding the extreme (or the first NaN), kRunLanes elements per test.
  /// The result is reduce's over the run: ties and -0 == +0 go to the first position.
  static constexpr int64_t kRunLanes = 16;
  Acc fold_run(const T* x, int64_t n, int64_t pos) const {
    const std::pair<V, bool> extreme = run_extreme<kMax, V>(x, n);
    const V m = extreme.first;  // plain variables: lambdas may not capture structured bindings
    const bool any_nan = extreme.second;
    auto holds = [&](V v) { return any_nan ? v != v : v == m; };
    for (int64_t b = 0;; b += kRunLanes) {  // the loop ends: some element holds m or a NaN
      const int64_t e = std::min(n, b + kRunLanes);
      int hit = 0;
      for (int64_t k = b; k < e; ++k) hit |= holds(V(x[k]));
      if (!hit) continue;
      for (int64_t k = b;; ++k)
        if (holds(V(x[k]))) return {V(x[k]), pos + k};
    }
  }
};

/// Welford's running mean and sum of squared deviations, merged with Chan's formula.
template <class T, bool kStd>
struct MomentsOp {
  using In = T;
  struct Acc {
    double mean = 0, m2 = 0;
    int64_t n = 0;
  };
  double correction = 1;
  Acc identity() const { return {}; }
  void reduce(Acc& a, T x, int64_t) const {
    const double v = double(opmath_t<T>(x));
    a.n += 1;
    const double d = v - a.mean;
    a.mean += d / double(a.n);
    a.m2 += d * (v - a.mean);
  }
  void combine(Acc& a, const Acc& b) const {
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
  void write(const ReducePlan& p, int64_t off, const Acc& a) const {
    const double var = a.m2 / std::max(0.0, double(a.n) - correction);
    store<T>(p, off, kStd ? std::sqrt(var) : var);
  }
};

enum class NormKind { L1, L2, Inf, NegInf, L0, P };

template <class T, NormKind kKind>
struct NormOp {
  using In = T;
  using Acc = double;
  double p = 2;
  Acc identity() const { return kKind == NormKind::NegInf ? kInf : 0.0; }
  void reduce(Acc& a, T x, int64_t) const {
    const double v = std::fabs(double(opmath_t<T>(x)));
    if constexpr (kKind == NormKind::L1) a += v;
    else if constexpr (kKind == NormKind::L2) a += v * v;
    else if constexpr (kKind == NormKind::Inf) a = (v > a || v != v) ? v : a;
    else if constexpr (kKind == NormKind::NegInf) a = (v < a || v != v) ? v : a;
    else if constexpr (kKind == NormKind::L0) a += v != 0 ? 1.0 : 0.0;
    else a += std::pow(v, p);
  }
  void combine(Acc& a, const Acc& b) const {
    if constexpr (kKind == NormKind::Inf) a = (b > a || b != b) ? b : a;
    else if constexpr (kKind == NormKind::NegInf) a = (b < a || b != b) ? b : a;
    else a += b;
  }
  void write(const ReducePlan& pl, int64_t off, Acc a) const {
    if constexpr (kKind == NormKind::L2) a = std::sqrt(a);
    else if constexpr (kKind == NormKind::P) a = std::pow(a, 1.0 / p);
    store<T>(pl, off, a);
  }
};

/// all (kAll) / any: elements count as true when non-zero (NaN is true).
template <class T, bool kAll>
struct LogicalOp {
  using In = T;
  using Acc = uint8_t;
  Acc identity() const { return kAll ? 1 : 0; }
  void reduce(Acc& a, T x, int64_t) const {
    const uint8_t t = opmath_t<T>(x) != opmath_t<T>(0);
    if constexpr (kAll) a &= t;
    else a |= t;
  }
  void combine(Acc& a, const Acc& b) const {
    if constexpr (kAll) a &= b;
    else a |= b;
  }
  void write(const ReducePlan& p, int64_t off, Acc a) const {
    reinterpret_cast<bool*>(p.out)[off] = a != 0;
  }
};

/// log(sum(exp(x))) in one pass: the running max m and the sum s of exp(x - m), rescaled
/// whenever m grows, so nothing overflows. Equal values (including two infinities) add 1.
template <class T>
struct LogSumExpOp {
  using In = T;
  struct Acc {
    double m = -kInf, s = 0;
  };
  Acc identity() const { return {}; }
  static void merge(Acc& a, double m, double s) {
    if (m > a.m) {
      a.s = a.s * std::exp(a.m - m) + s;
      a.m = m;
    } else if (m == a.m) {
      a.s += s;
    } else {
      a.s += s * std::exp(m - a.m);  // NaN m lands here and makes s NaN
    }
  }
  void reduce(Acc& a, T x, int64_t) const { merge(a, double(opmath_t<T>(x)), 1.0); }
  void combine(Acc& a, const Acc& b) const {
    if (b.s != 0 || b.m != -kInf) merge(a, b.m, b.s);
  }
  /// A contiguous run of float (or 16-bit) values in two passes that vectorise, instead of a
  /// libm exp and a branch per element: the maximum m (and whether a NaN occurs), then the sum
  /// of fast_exp(x - m) in float lanes added to a double total every kFoldEvery rounds. The
  /// run's exp terms are then within 2 ulp each (e^0 = 1 exactly). An infinite m keeps
  /// reduce's rule (values equal to m add 1, the others 0); a NaN makes the sum NaN.
  static constexpr int64_t kRunLanes = 16;
  static constexpr int64_t kFoldEvery = 64;
  // (clang-format 14 garbles a trailing requires-clause)
  // clang-format off
  Acc fold_run(const T* x, int64_t n, int64_t) const
    requires std::is_same_v<opmath_t<T>, float>
  {
    // clang-format on
    const std::pair<float, bool> extreme = run_extreme<true, float>(x, n);  // first pass
    const float m = extreme.first;  // a plain variable: it is read in OpenMP simd loops
    if (extreme.second) return {double(m), std::numeric_limits<double>::quiet_NaN()};
    if (std::isinf(m)) {
      double count = 0;
      for (int64_t k = 0; k < n; ++k) count += float(x[k]) == m;
      return {double(m), count};
    }
    double total = 0;
    for (int64_t b = 0; b < n; b += kRunLanes * kFoldEvery) {
      const int64_t e = std::min(n, b + kRunLanes * kFoldEvery);
      float lanes[kRunLanes] = {};
      int64_t k = b;
      for (; k + kRunLanes <= e; k += kRunLanes) {
#pragma omp simd
        for (int64_t j = 0; j < kRunLanes; ++j) lanes[j] += kernels::fast_exp(float(x[k + j]) - m);
      }
      for (; k < e; ++k) lanes[0] += kernels::fast_exp(float(x[k]) - m);
      for (int64_t j = 0; j < kRunLanes; ++j) total += lanes[j];
    }
    return {double(m), total};
  }
  void write(const ReducePlan& p, int64_t off, const Acc& a) const {
    store<T>(p, off, a.s == 0 ? -kInf : a.m + std::log(a.s));
  }
};

template <class T>
void reduce_floating_only(const ReduceArgs& args) {
  const ReducePlan& p = args.plan;
  switch (args.op) {
    case ReduceOp::Mean: return run_reduction(p, SumOp<T, T, true>{p.num_reduced});
    case ReduceOp::Var: return run_reduction(p, MomentsOp<T, false>{args.correction});
    case ReduceOp::Std: return run_reduction(p, MomentsOp<T, true>{args.correction});
    case ReduceOp::NormL1: return run_reduction(p, NormOp<T, NormKind::L1>{});
    case ReduceOp::NormL2: return run_reduction(p, NormOp<T, NormKind::L2>{});
    case ReduceOp::NormInf: return run_reduction(p, NormOp<T, NormKind::Inf>{});
    case ReduceOp::NormNegInf: return run_reduction(p, NormOp<T, NormKind::NegInf>{});
    case ReduceOp::NormL0: return run_reduction(p, NormOp<T, NormKind::L0>{});
    case ReduceOp::NormP: return run_reduction(p, NormOp<T, NormKind::P>{args.p});
    case ReduceOp::LogSumExp: return run_reduction(p, LogSumExpOp<T>{});
    default: return;
  }
}

void reduce_kernel(const ReduceArgs& args) {
  const ReducePlan& p = args.plan;
  visit_dtype(p.in_dtype, [&]<class T>() {
    // Sum/Prod write their own dtype, or int64 for integer and bool inputs.
    const bool widened = p.out_dtype != p.in_dtype;
    switch (args.op) {
      case ReduceOp::Sum:
        if constexpr (!is_floating_v<T>)
          if (widened) return run_reduction(p, SumOp<T, int64_t, false>{});
        return run_reduction(p, SumOp<T, T, false>{});
      case ReduceOp::Prod:
        if constexpr (!is_floating_v<T>)
          if (widened) return run_reduction(p, ProdOp<T, int64_t>{});
        return run_reduction(p, ProdOp<T, T>{});
      case ReduceOp::Max: return run_reduction(p, ExtremeOp<T, true>{});
      case ReduceOp::Min: return run_reduction(p, ExtremeOp<T, false>{});
      case ReduceOp::ArgMax: return run_reduction(p, ArgExtremeOp<T, true>{});
      case ReduceOp::ArgMin: return run_reduction(p, ArgExtremeOp<T, false>{});
      case ReduceOp::All: return run_reduction(p, LogicalOp<T, true>{});
      case ReduceOp::Any: return run_reduction(p, LogicalOp<T, false>{});
      default:
        if constexpr (is_floating_v<T>) return reduce_floating_only<T>(args);
        else
          throw DTypeError(std::string("[reduce] floating-point reduction given ") +
                           dtype_name(p.in_dtype));
    }
  });
}
}  // namespace

void register_reduce_cpu() { detail::reduce_kernel.set(DeviceType::CPU, &reduce_kernel); }

}  // namespace ignis::cpu
