// Reductions against float64 loops: every op over 1-D..4-D shapes, every dim subset (negative
// dims, keepdim), every layout and the dtypes each op allows; empty tensors, large inputs that
// use several threads, NaN and tie rules, large-magnitude softmax, and every error message.
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "support/test_support.h"

namespace ignis::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using RefFn = std::function<double(const std::vector<double>&)>;
using ReduceFn = std::function<Tensor(const Tensor&, const Shape&, bool)>;

const std::vector<Shape> kShapes = {{7}, {5, 6}, {3, 4, 5}, {2, 3, 4, 5}, {3, 1, 4}, {70, 3}, {2, 75}};

/// Every subset of dims of an nd-dim tensor; odd positions written as negative dims. The empty
/// list (all dims) comes first.
std::vector<Shape> dim_lists(int64_t nd) {
  std::vector<Shape> out;
  for (uint64_t m = 0; m < (1ull << nd); ++m) {
    Shape dims;
    for (int64_t d = 0; d < nd; ++d)
      if ((m >> d) & 1) dims.push_back(d % 2 ? d - nd : d);
    out.push_back(dims);
  }
  return out;
}

uint64_t mask_of(const Shape& dims, int64_t nd) {
  if (dims.empty()) return (1ull << nd) - 1;
  uint64_t m = 0;
  for (int64_t d : dims) m |= 1ull << (d < 0 ? d + nd : d);
  return m;
}

Shape reduced_shape(const Shape& shape, uint64_t mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!((mask >> d) & 1)) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

/// fn applied to the elements of each output (in logical row-major order), row-major outputs.
std::vector<double> ref_reduce(const std::vector<double>& x, const Shape& shape, uint64_t mask,
                               const RefFn& fn) {
  Shape oshape = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if ((mask >> d) & 1) oshape[d] = 1;
  int64_t nout = 1;
  for (int64_t s : oshape) nout *= s;
  std::vector<std::vector<double>> groups(static_cast<size_t>(nout));
  for (size_t i = 0; i < x.size(); ++i) {
    auto idx = unravel(int64_t(i), shape);
    for (size_t d = 0; d < shape.size(); ++d)
      if ((mask >> d) & 1) idx[d] = 0;
    groups[size_t(ravel(idx, oshape))].push_back(x[i]);
  }
  std::vector<double> out;
  for (auto& g : groups) out.push_back(fn(g));
  return out;
}

/// Random values suited to dtype: integers for integer dtypes, 0/1 for bool.
std::vector<double> gen_values(int64_t n, DType dt, uint64_t seed, double lo, double hi) {
  auto v = random_values(n, lo, hi, seed);
  for (double& x : v) {
    if (dt == kBool) x = x > (lo + hi) / 2 ? 1 : 0;
    else if (dt == kUInt8) x = std::floor(std::fabs(x));
    else if (is_integral(dt)) x = std::floor(x);
  }
  return v;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

// ---- reference reductions -----------------------------------------------------------------
double r_sum(const std::vector<double>& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double r_mean(const std::vector<double>& g) { return r_sum(g) / double(g.size()); }
double r_prod(const std::vector<double>& g) {
  double s = 1;
  for (double v : g) s *= v;
  return s;
}
double r_max(const std::vector<double>& g) {
  double m = -kInf;
  for (double v : g) m = std::isnan(v) || v > m ? v : m;
  return std::isnan(m) ? kNaN : m;
}
double r_min(const std::vector<double>& g) {
  double m = kInf;
  for (double v : g) m = std::isnan(v) || v < m ? v : m;
  return m;
}
double r_argmax(const std::vector<double>& g) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[best])) break;
    if (std::isnan(g[i]) || g[i] > g[best]) best = i;
  }
  return double(best);
}
double r_argmin(const std::vector<double>& g) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[best])) break;
    if (std::isnan(g[i]) || g[i] < g[best]) best = i;
  }
  return double(best);
}
RefFn r_var(double correction, bool take_sqrt) {
  return [=](const std::vector<double>& g) {
    const double m = r_mean(g);
    double ss = 0;
    for (double v : g) ss += (v - m) * (v - m);
    const double var = ss / std::max(0.0, double(g.size()) - correction);
    return take_sqrt ? std::sqrt(var) : var;
  };
}
RefFn r_norm(double p) {
  return [=](const std::vector<double>& g) {
    if (std::isinf(p)) {
      double m = p > 0 ? 0 : kInf;
      for (double v : g) m = p > 0 ? std::max(m, std::fabs(v)) : std::min(m, std::fabs(v));
      return m;
    }
    double s = 0;
    for (double v : g) s += p == 0 ? (v != 0) : std::pow(std::fabs(v), p);
    return p == 0 ? s : std::pow(s, 1 / p);
  };
}
double r_all(const std::vector<double>& g) {
  for (double v : g)
    if (v == 0) return 0;
  return 1;
}
double r_any(const std::vector<double>& g) {
  for (double v : g)
    if (v != 0) return 1;
  return 0;
}
double r_logsumexp(const std::vector<double>& g) {
  double m = -kInf;
  for (double v : g) m = std::max(m, v);
  if (std::isinf(m)) return m;
  double s = 0;
  for (double v : g) s += std::exp(v - m);
  return m + std::log(s);
}

/// Checks op against ref over every shape, dim list, keepdim, layout and dtype.
/// out_dtype maps the input dtype to the expected result dtype; tol gives (rtol, atol) for
/// the result dtype, the number of reduced elements and the largest |input|.
void check_reduction(const char* name, const ReduceFn& op, const RefFn& ref,
                     const std::vector<DType>& dtypes, const std::function<DType(DType)>& out_dtype,
                     double lo, double hi,
                     const std::function<std::pair<double, double>(DType, int64_t, double)>& tol) {
  uint64_t seed = 1;
  for (DType dt : dtypes) {
    for (const Shape& shape : kShapes) {
      const auto values = gen_values(numel_of(shape), dt, seed++, lo, hi);
      for (Layout layout : kAllLayouts) {
        const Tensor x = make_input(values, shape, dt, layout);
        const auto stored = values_of(x);
        double maxabs = 0;
        for (double v : stored) maxabs = std::max(maxabs, std::fabs(v));
        for (const Shape& dims : dim_lists(int64_t(shape.size()))) {
          const uint64_t mask = mask_of(dims, int64_t(shape.size()));
          int64_t count = 1;
          for (size_t d = 0; d < shape.size(); ++d)
            if ((mask >> d) & 1) count *= shape[d];
          const auto expected = ref_reduce(stored, shape, mask, ref);
          for (bool keepdim : {false, true}) {
            SCOPED_TRACE(fmt::format("{} dtype {} shape {} dims {} keepdim {} layout {}", name,
                                     dtype_name(dt), fmt::join(shape, "x"), fmt::join(dims, ","),
                                     keepdim, layout_name(layout)));
            const Tensor out = op(x, dims, keepdim);
            EXPECT_EQ(out.dtype(), out_dtype(dt));
            EXPECT_EQ(out.sizes(), reduced_shape(shape, mask, keepdim));
            const auto [rtol, atol] = tol(out.dtype(), count, maxabs);
            EXPECT_TRUE(all_close(out, expected, rtol, atol));
          }
        }
      }
    }
  }
}

const std::vector<DType> kFloatTypes = {kFloat32, kFloat64, kBFloat16, kFloat16};
const std::vector<DType> kAllTypes = {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32,
                                      kInt64,   kUInt8,   kBool};

DType same(DType t) { return t; }
DType sum_dtype(DType t) { return is_floating(t) ? t : kInt64; }

/// Sums: the output rounding, plus float32's relative error on the magnitude summed.
std::pair<double, double> sum_tol(DType t, int64_t n, double maxabs) {
  const double r = default_rtol(t);
  return {r, r * maxabs * double(std::max<int64_t>(n, 1)) * 1e-2};
}
std::pair<double, double> exact_tol(DType t, int64_t, double) { return {default_rtol(t), 1e-12}; }

// ---- value reductions ------------------------------------------------------------------------
TEST(Reduce, Sum) {
  check_reduction("sum", [](const Tensor& x, const Shape& d, bool k) { return sum(x, d, k); },
                  r_sum, kAllTypes, sum_dtype, -3, 3, sum_tol);
}

TEST(Reduce, SumWithDtype) {
  const auto v = gen_values(30, kInt32, 3, -50, 50);
  const Tensor x = make_input(v, {5, 6}, kInt32, Layout::Transposed);
  Tensor f = sum(x, {1}, false, kFloat64);
  EXPECT_EQ(f.dtype(), kFloat64);
  EXPECT_TRUE(all_close(f, ref_reduce(v, {5, 6}, 2, r_sum), 0, 0));
  Tensor i = sum(x, {}, false, kInt32);
  EXPECT_EQ(i.dtype(), kInt32);
  EXPECT_EQ(i.item<int64_t>(), int64_t(r_sum(v)));
  // A float input with an integer dtype converts each element first, as torch.sum does.
  EXPECT_EQ(sum(tensor<double>({1.5, 2.7}), {}, false, kInt64).item<int64_t>(), 3);
  // uint8 sums wrap in their dtype when asked to keep it.
  EXPECT_EQ(sum(tensor<double>({200, 200}).to(kUInt8), {}, false, kUInt8).item<int64_t>(), 144);
  EXPECT_EQ(sum(tensor<double>({1, 2}).to(kBFloat16), {}, false, kFloat32).dtype(), kFloat32);
}

TEST(Reduce, Mean) {
  check_reduction("mean", [](const Tensor& x, const Shape& d, bool k) { return mean(x, d, k); },
                  r_mean, kFloatTypes, same, -3, 3, sum_tol);
}

TEST(Reduce, Prod) {
  check_reduction("prod", [](const Tensor& x, const Shape& d, bool k) { return prod(x, d, k); },
                  r_prod, kFloatTypes, same, 0.6, 1.5, exact_tol);
  // Integers in {-1, 0, 1} so products of 120 elements stay exact.
  check_reduction("prod", [](const Tensor& x, const Shape& d, bool k) { return prod(x, d, k); },
                  r_prod, {kInt32, kInt64, kUInt8, kBool}, sum_dtype, -1, 1.99, exact_tol);
  Tensor p = prod(tensor<int64_t>({2, 3, -4}).to(kInt32));
  EXPECT_EQ(p.dtype(), kInt64);
  EXPECT_EQ(p.item<int64_t>(), -24);
}

TEST(Reduce, AmaxAmin) {
  check_reduction("amax", [](const Tensor& x, const Shape& d, bool k) { return amax(x, d, k); },
                  r_max, kAllTypes, same, -9, 9, exact_tol);
  check_reduction("amin", [](const Tensor& x, const Shape& d, bool k) { return amin(x, d, k); },
                  r_min, kAllTypes, same, -9, 9, exact_tol);
}

TEST(Reduce, VarStd) {
  for (double correction : {0.0, 1.0, 2.0}) {
    auto tol = [](DType t, int64_t, double m) {
      return std::pair{default_rtol(t), default_rtol(t) * m * m * 1e-3};
    };
    check_reduction(
        "var", [&](const Tensor& x, const Shape& d, bool k) { return var(x, d, correction, k); },
        r_var(correction, false), kFloatTypes, same, -3, 5, tol);
    check_reduction(
        "std", [&](const Tensor& x, const Shape& d, bool k) { return ignis::std(x, d, correction, k); },
        r_var(correction, true), {kFloat32, kFloat64}, same, -3, 5, tol);
  }
}

TEST(Reduce, Norm) {
  for (double p : {1.0, 2.0, kInf, -kInf, 0.0, 3.0}) {
    check_reduction(
        "norm", [&](const Tensor& x, const Shape& d, bool k) { return norm(x, p, d, k); },
        r_norm(p), kFloatTypes, same, -3, 3,
        [](DType t, int64_t, double) { return std::pair{default_rtol(t) * 2, 1e-6}; });
  }
}

TEST(Reduce, AllAny) {
  auto is_bool = [](DType) { return kBool; };
  // Mostly non-zero values with some zeros, so both answers occur.
  check_reduction("all", [](const Tensor& x, const Shape& d, bool k) { return all(x, d, k); },
                  r_all, kAllTypes, is_bool, -0.4, 6, exact_tol);
  check_reduction("any", [](const Tensor& x, const Shape& d, bool k) { return any(x, d, k); },
                  r_any, kAllTypes, is_bool, -0.2, 1.4, exact_tol);
  EXPECT_TRUE(all(tensor<double>({kNaN, -1})).item<bool>());
  EXPECT_TRUE(any(tensor<double>({kNaN, 0})).item<bool>());
}

TEST(Reduce, LogSumExp) {
  check_reduction(
      "logsumexp",
      [](const Tensor& x, const Shape& d, bool k) { return logsumexp(x, d, k); }, r_logsumexp,
      kFloatTypes, same, -20, 20,
      [](DType t, int64_t, double) { return std::pair{default_rtol(t), default_rtol(t)}; });
  // Integers become float32.
  Tensor li = logsumexp(tensor<int64_t>({1, 2}), {0});
  EXPECT_EQ(li.dtype(), kFloat32);
  EXPECT_TRUE(all_close(li, {r_logsumexp({1, 2})}, 1e-6, 0));
  // Large magnitudes, infinities and NaN.
  auto lse = [](std::vector<double> v) { return logsumexp(tensor(v), {0}).item<double>(); };
  EXPECT_NEAR(lse({1000, 1000}), 1000 + std::log(2.0), 1e-9);
  EXPECT_NEAR(lse({-1000, -1000, -1000}), -1000 + std::log(3.0), 1e-9);
  EXPECT_EQ(lse({-kInf, -kInf}), -kInf);
  EXPECT_EQ(lse({kInf, 1}), kInf);
  EXPECT_EQ(lse({kInf, kInf}), kInf);
  EXPECT_TRUE(std::isnan(lse({1, kNaN, 2})));
  // Rows of float and bf16 long enough for the vectorised two-pass fold (fast_exp in float
  // lanes): random rows with some -inf, equal values, and the infinity and NaN rules again.
  for (DType dt : {kFloat32, kBFloat16}) {
    auto lse_of = [&](const std::vector<double>& v) {
      return logsumexp(tensor(v).to(dt), {0}).to(kFloat64).item<double>();
    };
    std::vector<double> v = round_to(random_values(1000, -30, 30, 77), dt);
    for (size_t i = 0; i < v.size(); i += 37) v[i] = -kInf;
    const double rtol = dt == kFloat32 ? 1e-6 : 8e-3;
    EXPECT_NEAR(lse_of(v), r_logsumexp(v), rtol * std::abs(r_logsumexp(v))) << dtype_name(dt);
    const std::vector<double> equal(1000, -1000.0);
    EXPECT_NEAR(lse_of(equal), -1000 + std::log(1000.0), 1000 * rtol) << dtype_name(dt);
    EXPECT_EQ(lse_of(std::vector<double>(1000, -kInf)), -kInf) << dtype_name(dt);
    std::vector<double> w = v;
    w[500] = kInf;
    EXPECT_EQ(lse_of(w), kInf) << dtype_name(dt);
    w[900] = kInf;
    EXPECT_EQ(lse_of(w), kInf) << dtype_name(dt);
    w[700] = kNaN;
    EXPECT_TRUE(std::isnan(lse_of(w))) << dtype_name(dt);
    w = v;
    w[999] = kNaN;  // in the tail after the last block of 16
    EXPECT_TRUE(std::isnan(lse_of(w))) << dtype_name(dt);
  }
}

// ---- index reductions ----------------------------------------------------------------------
/// max/min along each dim and argmax/argmin (per dim and flattened) on values with many ties.
TEST(Reduce, MaxMinWithIndices) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    uint64_t seed = 100;
    for (const Shape& shape : kShapes) {
      const auto values = gen_values(numel_of(shape), dt, seed++, -3, 3);
      for (Layout layout : kAllLayouts) {
        const Tensor x = make_input(values, shape, dt, layout);
        const auto stored = values_of(x);
        const int64_t nd = int64_t(shape.size());
        for (int64_t d = -nd; d < nd; ++d) {
          const uint64_t mask = 1ull << (d < 0 ? d + nd : d);
          for (bool keepdim : {false, true}) {
            SCOPED_TRACE(fmt::format("dtype {} shape {} dim {} keepdim {} layout {}",
                                     dtype_name(dt), fmt::join(shape, "x"), d, keepdim,
                                     layout_name(layout)));
            auto [mv, mi] = max(x, d, keepdim);
            auto [nv, ni] = min(x, d, keepdim);
            EXPECT_EQ(mv.dtype(), dt);
            EXPECT_EQ(mi.dtype(), kInt64);
            EXPECT_EQ(mi.sizes(), reduced_shape(shape, mask, keepdim));
            EXPECT_TRUE(all_close(mv, ref_reduce(stored, shape, mask, r_max), 0, 0));
            EXPECT_TRUE(all_close(mi, ref_reduce(stored, shape, mask, r_argmax), 0, 0));
            EXPECT_TRUE(all_close(nv, ref_reduce(stored, shape, mask, r_min), 0, 0));
            EXPECT_TRUE(all_close(ni, ref_reduce(stored, shape, mask, r_argmin), 0, 0));
            EXPECT_TRUE(all_close(argmax(x, d, keepdim), ref_reduce(stored, shape, mask, r_argmax), 0, 0));
            EXPECT_TRUE(all_close(argmin(x, d, keepdim), ref_reduce(stored, shape, mask, r_argmin), 0, 0));
          }
        }
        SCOPED_TRACE(fmt::format("flattened, dtype {} shape {} layout {}", dtype_name(dt),
                                 fmt::join(shape, "x"), layout_name(layout)));
        EXPECT_EQ(argmax(x).item<int64_t>(), int64_t(r_argmax(stored)));
        EXPECT_EQ(argmin(x).item<int64_t>(), int64_t(r_argmin(stored)));
        EXPECT_EQ(argmax(x, std::nullopt, true).sizes(), Shape(size_t(nd), 1));
        EXPECT_EQ(max(x).item<double>(), r_max(stored));
        EXPECT_EQ(min(x).item<double>(), r_min(stored));
        EXPECT_EQ(x.max().dim(), 0);
      }
    }
  }
}

TEST(Reduce, NanPropagationAndFirstIndex) {
  // Short rows, long rows (several accumulator lanes) and columns (the across-outputs loop).
  std::vector<double> row(100, 1.0);
  row[10] = 7;
  row[60] = 7;  // tie: first wins
  EXPECT_EQ(argmax(tensor(row)).item<int64_t>(), 10);
  row[40] = kNaN;
  row[70] = kNaN;
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    const Tensor x = tensor(row).to(dt);
    EXPECT_TRUE(std::isnan(max(x).item<double>()));
    EXPECT_TRUE(std::isnan(amin(x).item<double>()));
    EXPECT_EQ(argmax(x).item<int64_t>(), 40);
    EXPECT_EQ(argmin(x).item<int64_t>(), 40);
    auto [v, i] = min(x, 0);
    EXPECT_TRUE(std::isnan(v.item<double>()));
    EXPECT_EQ(i.item<int64_t>(), 40);
    // The same data as a column of a [100, 3] matrix, reduced over dim 0.
    Tensor m = x.unsqueeze(1).expand({100, 3}).contiguous();
    EXPECT_TRUE(all_close(argmax(m, 0), {40, 40, 40}, 0, 0));
    EXPECT_TRUE(all_close(amax(m, {0}), {kNaN, kNaN, kNaN}, 0, 0));
    EXPECT_TRUE(all_close(norm(m, kInf, {0}), {kNaN, kNaN, kNaN}, 0, 0));
  }
  EXPECT_EQ(argmax(tensor<double>({1, kNaN, 3, kNaN})).item<int64_t>(), 1);
  EXPECT_EQ(argmax(tensor<double>({1, 5, 5})).item<int64_t>(), 1);
  EXPECT_EQ(argmax(full({1000}, 2.0)).item<int64_t>(), 0);
  EXPECT_TRUE(all_close(argmin(full({1000, 5}, 2.0), 0), {0, 0, 0, 0, 0}, 0, 0));
  // The sum of a NaN is NaN.
  EXPECT_TRUE(std::isnan(sum(tensor<double>({1, kNaN})).item<double>()));
}

// argmax/argmin over contiguous runs of 32 or more fold each run in two passes (its extreme,
// then the first position holding it): rows with ties spread over lanes and blocks, -0 before
// +0, NaN in the middle or only in the tail, the extreme in the last element, and outputs that
// fold two runs each (a narrowed [2, n + 5] flattened), against the serial rule of r_argmax.
TEST(Reduce, ArgExtremeOfLongRunsKeepsTheSerialRule) {
  for (int64_t n : {32, 33, 47, 1000}) {
    std::vector<double> base(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) base[size_t(i)] = double((i * 37) % 11) - 5;  // many ties
    std::vector<std::vector<double>> rows(5, base);
    rows[1].assign(size_t(n), -1.0);
    rows[1][size_t(n / 3)] = -0.0;
    rows[1][size_t(n / 2)] = 0.0;
    rows[2][size_t(n / 2)] = kNaN;
    rows[2][size_t(n - 1)] = kNaN;
    rows[3][size_t(n - 1)] = kNaN;
    rows[4][size_t(n - 1)] = 9;
    for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32}) {
      for (size_t r = 0; r < rows.size(); ++r) {
        const auto& row = rows[r];
        const bool has_nan =
            std::any_of(row.begin(), row.end(), [](double v) { return std::isnan(v); });
        if (has_nan && !is_floating(dt)) continue;
        SCOPED_TRACE(fmt::format("n {} dtype {} row {}", n, dtype_name(dt), r));
        const Tensor x = tensor(row).to(dt);
        const auto imax = int64_t(r_argmax(row)), imin = int64_t(r_argmin(row));
        EXPECT_EQ(argmax(x).item<int64_t>(), imax);
        EXPECT_EQ(argmin(x).item<int64_t>(), imin);
        auto [v, i] = max(x, 0);
        EXPECT_EQ(i.item<int64_t>(), imax);
        if (is_floating(dt))  // the value at that position, -0 kept
          EXPECT_EQ(std::signbit(v.item<double>()), std::signbit(row[size_t(imax)]));
        // Two runs per output: the same row twice, then a second row with a larger value.
        Tensor wide = zeros({2, n + 5}, dt);
        Tensor two = wide.narrow(1, 0, n);
        two.copy_(stack({x, x}));
        EXPECT_EQ(argmax(two).item<int64_t>(), imax);
        EXPECT_EQ(argmin(two).item<int64_t>(), imin);
        if (!has_nan) {
          two.select(0, 1).narrow(0, 5, 1).fill_(100);
          EXPECT_EQ(argmax(two).item<int64_t>(), n + 5);
        }
      }
    }
  }
}

TEST(Reduce, BroadcastInput) {
  // Expanded inputs have stride 0 along the broadcast dim, reduced or kept.
  const Tensor row = tensor<double>({1, -2, 3});
  const Tensor x = row.unsqueeze(0).expand({1000, 3});
  EXPECT_TRUE(all_close(sum(x, {0}), {1000, -2000, 3000}, 0, 0));
  EXPECT_TRUE(all_close(sum(x, {1}), std::vector<double>(1000, 2), 0, 0));
  EXPECT_TRUE(all_close(argmax(x, 0), {0, 0, 0}, 0, 0));
  EXPECT_TRUE(all_close(var(x, {0}), {0, 0, 0}, 0, 1e-12));
  const Tensor col = tensor<double>({4, 5}).unsqueeze(1).expand({2, 500});
  EXPECT_TRUE(all_close(sum(col, {1}), {2000, 2500}, 0, 0));
  EXPECT_TRUE(all_close(softmax(col, 1), std::vector<double>(1000, 1.0 / 500), 1e-12, 0));
  EXPECT_TRUE(all_close(cumsum(col, 0).select(1, 7), {4, 9}, 0, 0));
}

// ---- empty tensors ---------------------------------------------------------------------------
TEST(Reduce, EmptyTensors) {
  const Tensor e = zeros({0, 3});
  EXPECT_TRUE(all_close(sum(e, {0}), {0, 0, 0}, 0, 0));
  EXPECT_EQ(sum(e, {1}).sizes(), Shape{0});
  EXPECT_EQ(sum(e).item<double>(), 0);
  EXPECT_EQ(sum(zeros({0}, kInt32)).dtype(), kInt64);
  EXPECT_TRUE(all_close(prod(e, {0}), {1, 1, 1}, 0, 0));
  EXPECT_TRUE(all_close(mean(e, {0}), {kNaN, kNaN, kNaN}, 0, 0));
  EXPECT_TRUE(all_close(var(e, {0}), {kNaN, kNaN, kNaN}, 0, 0));
  EXPECT_TRUE(all_close(norm(e, 2, {0}), {0, 0, 0}, 0, 0));
  EXPECT_TRUE(all_close(logsumexp(e, {0}), {-kInf, -kInf, -kInf}, 0, 0));
  EXPECT_TRUE(all(zeros({0})).item<bool>());
  EXPECT_FALSE(any(zeros({0})).item<bool>());
  EXPECT_EQ(amax(e, {1}).sizes(), Shape{0});  // nothing to reduce over an empty output
  EXPECT_EQ(std::get<1>(max(e, 1)).sizes(), Shape{0});
  EXPECT_EQ(argmax(e, 1).sizes(), Shape{0});
  EXPECT_EQ(softmax(e, 0).sizes(), (Shape{0, 3}));
  EXPECT_EQ(cumsum(e, 1).sizes(), (Shape{0, 3}));
  // 0-dim tensors reduce to themselves.
  const Tensor s = scalar_tensor(3.5);
  EXPECT_EQ(sum(s).item<double>(), 3.5);
  EXPECT_EQ(sum(s, {0}).dim(), 0);
  EXPECT_EQ(std::get<1>(max(s, -1)).item<int64_t>(), 0);
  EXPECT_EQ(softmax(s, 0).item<double>(), 1.0);
  EXPECT_EQ(cumsum(s, 0).item<double>(), 3.5);
}

// ---- softmax, log_softmax, cumsum ------------------------------------------------------------
std::vector<double> ref_softmax(const std::vector<double>& x, const Shape& shape, int64_t dim,
                                bool log) {
  std::vector<double> out(x.size());
  const uint64_t mask = 1ull << dim;
  const auto lse = ref_reduce(x, shape, mask, r_logsumexp);
  Shape oshape = shape;
  oshape[size_t(dim)] = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    auto idx = unravel(int64_t(i), shape);
    idx[size_t(dim)] = 0;
    const double l = lse[size_t(ravel(idx, oshape))];
    out[i] = log ? x[i] - l : std::exp(x[i] - l);
  }
  return out;
}

TEST(Softmax, EveryDimLayoutDtype) {
  uint64_t seed = 500;
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32}) {
    for (const Shape& shape : {Shape{7}, Shape{5, 40}, Shape{3, 4, 5}, Shape{2, 3, 4, 37}}) {
      const auto values = gen_values(numel_of(shape), dt, seed++, -8, 8);
      for (Layout layout : kAllLayouts) {
        const Tensor x = make_input(values, shape, dt, layout);
        const auto stored = values_of(x);
        const int64_t nd = int64_t(shape.size());
        for (int64_t d = -nd; d < nd; ++d) {
          SCOPED_TRACE(fmt::format("dtype {} shape {} dim {} layout {}", dtype_name(dt),
                                   fmt::join(shape, "x"), d, layout_name(layout)));
          const int64_t w = d < 0 ? d + nd : d;
          const DType rt = is_floating(dt) ? dt : kFloat32;
          const double rtol = default_rtol(rt) * 2;
          Tensor s = softmax(x, d), ls = log_softmax(x, d);
          EXPECT_EQ(s.dtype(), rt);
          EXPECT_EQ(s.sizes(), shape);
          EXPECT_TRUE(all_close(s, ref_softmax(stored, shape, w, false), rtol, 1e-7));
          EXPECT_TRUE(all_close(ls, ref_softmax(stored, shape, w, true), rtol, rtol));
        }
      }
    }
  }
}

TEST(Softmax, LargeMagnitudesAndInfinities) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = tensor<double>({1000, -1000}).to(dt);
    EXPECT_TRUE(all_close(softmax(x, 0), {1, 0}, 0, 0));
    EXPECT_TRUE(all_close(log_softmax(x, 0), {0, -2000}, 0, 0));
    const Tensor big = tensor<double>({1000, 1000, 1000, 1000}).to(dt);
    EXPECT_TRUE(all_close(softmax(big, 0), {0.25, 0.25, 0.25, 0.25}, 0, 0));
    // A row of -inf has no maximum to subtract: NaN, as in PyTorch; other rows are unaffected.
    const Tensor rows = tensor<double>({-kInf, -kInf, 0, -kInf}, Shape{2, 2}).to(dt);
    EXPECT_TRUE(all_close(softmax(rows, 1), {kNaN, kNaN, 1, 0}, 0, 0));
    EXPECT_TRUE(all_close(log_softmax(rows, 1), {kNaN, kNaN, 0, -kInf}, 0, 0));
    EXPECT_TRUE(all_close(softmax(tensor<double>({1, kNaN, 2}).to(dt), 0), {kNaN, kNaN, kNaN}, 0, 0));
  }
}

TEST(Cumsum, EveryDimLayoutDtype) {
  uint64_t seed = 900;
  for (DType dt : kAllTypes) {
    for (const Shape& shape : {Shape{7}, Shape{5, 6}, Shape{3, 4, 5}, Shape{2, 3, 4, 5}}) {
      const auto values = gen_values(numel_of(shape), dt, seed++, -5, 5);
      for (Layout layout : kAllLayouts) {
        const Tensor x = make_input(values, shape, dt, layout);
        const auto stored = values_of(x);
        const int64_t nd = int64_t(shape.size());
        for (int64_t d = -nd; d < nd; ++d) {
          SCOPED_TRACE(fmt::format("dtype {} shape {} dim {} layout {}", dtype_name(dt),
                                   fmt::join(shape, "x"), d, layout_name(layout)));
          const int64_t w = d < 0 ? d + nd : d;
          std::vector<double> expected(stored.size());
          for (size_t i = 0; i < stored.size(); ++i) {
            auto idx = unravel(int64_t(i), shape);
            double s = 0;
            const int64_t upto = idx[size_t(w)];
            for (int64_t k = 0; k <= upto; ++k) {
              idx[size_t(w)] = k;
              s += stored[size_t(ravel(idx, shape))];
            }
            expected[i] = s;
          }
          Tensor c = cumsum(x, d);
          EXPECT_EQ(c.dtype(), sum_dtype(dt));
          EXPECT_TRUE(all_close(c, expected, default_rtol(c.dtype()), 1e-6));
        }
      }
    }
  }
}

// ---- large inputs: several threads, accuracy of float32 sums ---------------------------------
class ReduceLarge : public ::testing::Test {
 protected:
  // More threads than this machine may have, so every split path runs.
  void SetUp() override { saved_ = get_num_threads(), set_num_threads(4); }
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = 1;
};

/// fn over each row (d == 1) or column (d == 0) of a row-major rows x cols matrix.
std::vector<double> ref_2d(const std::vector<double>& x, int64_t rows, int64_t cols, int64_t d,
                           const RefFn& fn) {
  std::vector<double> out;
  const int64_t n_out = d == 0 ? cols : rows, n_red = d == 0 ? rows : cols;
  std::vector<double> g(static_cast<size_t>(n_red));
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t k = 0; k < n_red; ++k) g[size_t(k)] = x[size_t(d == 0 ? k * cols + o : o * cols + k)];
    out.push_back(fn(g));
  }
  return out;
}

TEST_F(ReduceLarge, Float32SumsAreAccurate) {
  const int64_t n = int64_t(1) << 21;
  const auto v = random_values(n, 0, 1, 7);
  const Tensor x = tensor(v).to(kFloat32);
  const auto xs = values_of(x);
  EXPECT_TRUE(all_close(sum(x), {r_sum(xs)}, 1e-6, 0));
  EXPECT_TRUE(all_close(mean(x), {r_mean(xs)}, 1e-6, 0));
  EXPECT_TRUE(all_close(sum(x.to(kBFloat16)), {r_sum(values_of(x.to(kBFloat16)))}, 4e-3, 0));
  // The same values as matrices: per-row runs, columns (tiles split across threads), and a
  // few long rows (each split across threads).
  for (const Shape& shape : {Shape{2048, 1024}, Shape{1024, 2048}, Shape{3, 699050}, Shape{699050, 3}}) {
    const int64_t rows = shape[0], cols = shape[1];
    std::vector<double> sub(xs.begin(), xs.begin() + rows * cols);
    const Tensor m = x.narrow(0, 0, rows * cols).view(shape);
    for (int64_t d : {0, 1}) {
      SCOPED_TRACE(fmt::format("shape {} dim {}", fmt::join(shape, "x"), d));
      EXPECT_TRUE(all_close(sum(m, {d}), ref_2d(sub, rows, cols, d, r_sum), 1e-6, 0));
      EXPECT_TRUE(all_close(amax(m, {d}), ref_2d(sub, rows, cols, d, r_max), 0, 0));
      EXPECT_TRUE(all_close(argmin(m, d), ref_2d(sub, rows, cols, d, r_argmin), 0, 0));
      EXPECT_TRUE(all_close(var(m, {d}), ref_2d(sub, rows, cols, d, r_var(1, false)), 1e-5, 0));
      // Column-major storage of the same matrix takes the other loop.
      const Tensor mt = m.t().contiguous().t();
      EXPECT_TRUE(all_close(sum(mt, {d}), ref_2d(sub, rows, cols, d, r_sum), 1e-6, 0));
    }
    // cumsum along each dim: running sums of rows / columns.
    std::vector<double> c0(sub.size()), c1(sub.size());
    for (int64_t r = 0; r < rows; ++r) {
      double run = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = size_t(r * cols + c);
        c1[i] = run += sub[i];
        c0[i] = sub[i] + (r > 0 ? c0[i - size_t(cols)] : 0);
      }
    }
    EXPECT_TRUE(all_close(cumsum(m, 0), c0, 1e-6, 0));
    EXPECT_TRUE(all_close(cumsum(m, 1), c1, 1e-6, 0));
  }
}

TEST_F(ReduceLarge, SoftmaxMillionElements) {
  const Shape shape{1024, 1100};
  const auto v = random_values(numel_of(shape), -30, 30, 11);
  const Tensor x = tensor(v, shape).to(kFloat32);
  const auto xs = values_of(x);
  const auto lse_rows = ref_2d(xs, shape[0], shape[1], 1, r_logsumexp);
  const auto lse_cols = ref_2d(xs, shape[0], shape[1], 0, r_logsumexp);
  std::vector<double> sm1(xs.size()), lsm1(xs.size()), sm0(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    lsm1[i] = xs[i] - lse_rows[i / size_t(shape[1])];
    sm1[i] = std::exp(lsm1[i]);
    sm0[i] = std::exp(xs[i] - lse_cols[i % size_t(shape[1])]);
  }
  EXPECT_TRUE(all_close(softmax(x, 1), sm1, 2e-5, 1e-12));
  EXPECT_TRUE(all_close(log_softmax(x, 1), lsm1, 1e-5, 1e-5));
  EXPECT_TRUE(all_close(softmax(x, 0), sm0, 2e-5, 1e-12));
  EXPECT_TRUE(all_close(logsumexp(x, {1}), lse_rows, 1e-6, 0));
}

// ---- all_finite ------------------------------------------------------------------------------
// gradient_like_list's tensors (every dtype and layout, NaN in the gaps of views, more tensors
// than one CUDA launch takes). Each poison value is put in turn into each floating tensor, at
// a random position; the expected answer comes from every value read back and tested with
// std::isfinite.
TEST(AllFinite, FindsInfAndNanInAnyTensorOfAList) {
  auto make_list = [](uint64_t seed) { return gradient_like_list(Device::cpu(), seed); };
  auto expected = [](const std::vector<Tensor>& list) {
    for (const Tensor& t : list)
      for (double v : values_of(t))
        if (!std::isfinite(v)) return false;
    return true;
  };
  std::mt19937_64 rng(5);
  const std::vector<Tensor> clean = make_list(100);
  ASSERT_TRUE(expected(clean));
  const Tensor ok = all_finite(clean);
  EXPECT_EQ(ok.dtype(), kBool);
  EXPECT_EQ(ok.dim(), 0);
  EXPECT_TRUE(ok.item<bool>());
  for (size_t k = 0; k < clean.size(); ++k) {
    if (!is_floating(clean[k].dtype()) || clean[k].numel() == 0) continue;
    for (double poison : {kInf, -kInf, kNaN}) {
      std::vector<Tensor> list = make_list(100);
      const int64_t at = int64_t(rng() % uint64_t(list[k].numel()));
      Tensor e = list[k];
      for (int64_t i : unravel(at, e.sizes())) e = e.select(0, i);
      e.fill_(poison);
      ASSERT_FALSE(expected(list));
      EXPECT_FALSE(all_finite(list).item<bool>())
          << "poison " << poison << " at " << at << " of tensor " << k;
    }
  }
  // A finite float64 value past float16's range is inf once stored there.
  EXPECT_FALSE(all_finite({ones({3}), full({2}, 70000.0).to(kFloat16)}).item<bool>());
  EXPECT_TRUE(all_finite({}).item<bool>());
  EXPECT_TRUE(all_finite({zeros({4}, kInt32), zeros({0})}).item<bool>());
  EXPECT_THROW_MSG(
      all_finite({ones({2}), Tensor()}), ValueError, "[all_finite] tensor 1 is undefined");
}

// ---- errors ----------------------------------------------------------------------------------
TEST(Reduce, Errors) {
  const Tensor x = zeros({2, 3});
  EXPECT_THROW_MSG(sum(x, {5}), IndexError, "[sum] dimension 5 is out of range");
  EXPECT_THROW_MSG(sum(x, {0, -2}), IndexError, "[sum] dimension 0 appears more than once");
  EXPECT_THROW_MSG(amax(x, {-3}), IndexError, "[amax] dimension -3 is out of range");
  EXPECT_THROW_MSG(max(x, 2), IndexError, "[max] dimension 2 is out of range");
  EXPECT_THROW_MSG(argmin(x, -3), IndexError, "[argmin] dimension -3 is out of range");
  EXPECT_THROW_MSG(softmax(x, 2), IndexError, "[softmax] dimension 2 is out of range");
  EXPECT_THROW_MSG(log_softmax(x, -3), IndexError, "[log_softmax] dimension -3 is out of range");
  EXPECT_THROW_MSG(cumsum(x, 2), IndexError, "[cumsum] dimension 2 is out of range");
  EXPECT_THROW_MSG(logsumexp(x, {1, 1}), IndexError, "[logsumexp] dimension 1 appears more");
  const Tensor i = zeros({2, 3}, kInt64);
  EXPECT_THROW_MSG(mean(i), DTypeError, "[mean] expected a floating-point input, got int64");
  EXPECT_THROW_MSG(var(i), DTypeError, "[var] expected a floating-point input, got int64");
  EXPECT_THROW_MSG(ignis::std(i), DTypeError, "[std] expected a floating-point input, got int64");
  EXPECT_THROW_MSG(norm(i), DTypeError, "[norm] expected a floating-point input, got int64");
  const Tensor e = zeros({3, 0});
  EXPECT_THROW_MSG(max(zeros({0, 3})), IndexError, "[max] cannot reduce an empty tensor");
  EXPECT_THROW_MSG(min(zeros({0})), IndexError, "[min] cannot reduce an empty tensor");
  EXPECT_THROW_MSG(max(e, 1), IndexError, "[max] cannot reduce over dimension 1 of size 0");
  EXPECT_THROW_MSG(amax(e, {1}), IndexError, "[amax] cannot reduce over dimension 1 of size 0");
  EXPECT_THROW_MSG(amin(e), IndexError, "[amin] cannot reduce over dimension 1 of size 0");
  EXPECT_THROW_MSG(argmax(e), IndexError, "[argmax] cannot reduce an empty tensor");
  EXPECT_THROW_MSG(argmin(e, 1), IndexError, "[argmin] cannot reduce over dimension 1 of size 0");
  EXPECT_THROW_MSG(sum(Tensor()), ValueError, "[sum] undefined tensor");
  EXPECT_THROW_MSG(softmax(Tensor(), 0), ValueError, "[softmax] undefined tensor");
}

}  // namespace
}  // namespace ignis::testing
