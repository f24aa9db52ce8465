// Elementwise ops against float64 references. Two case tables (unary, binary): each row names
// the op, the ignis call, the float64 reference and the input domain; one test per property
// runs every row over dtypes, memory layouts and shapes (scalar, empty, odd length,
// 3-D, and > 1M elements for the threaded path). Adding an op adds a row.
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/shape.h"
#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace {

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<double(double)> ref;
  double lo, hi;
  bool floating_only;  // integer inputs promote to float32
  double atol = 1e-6;
};

double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double sign_ref(double x) { return double((x > 0) - (x < 0)); }

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, -10, 10, false},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::fabs(x); }, -10, 10, false},
      {"sign", [](const Tensor& x) { return sign(x); }, sign_ref, -10, 10, false},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; }, -10, 10, false},
      {"clamp", [](const Tensor& x) { return clamp(x, -2, 3); }, [](double x) { return std::min(std::max(x, -2.0), 3.0); }, -10, 10, false},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, -10, 10, true},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, 0.01, 100, true},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double x) { return std::log1p(x); }, -0.9, 10, true},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double x) { return std::expm1(x); }, -5, 5, true},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 100, true},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.01, 100, true},
      {"sin", [](const Tensor& x) { return sin(x); }, [](double x) { return std::sin(x); }, -6, 6, true},
      {"cos", [](const Tensor& x) { return cos(x); }, [](double x) { return std::cos(x); }, -6, 6, true},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -5, 5, true},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20, true},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_ref, -6, 6, true},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, gelu_tanh_ref, -6, 6, true},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }, -20, 20, true},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](double x) { return 1 / x; }, 0.25, 8, true},
      {"softplus", [](const Tensor& x) { return softplus(x, 2, 10); },
       [](double x) { return 2 * x > 10 ? x : std::log1p(std::exp(2 * x)) / 2; }, -10, 10, true},
  };
  return cases;
}

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<double(double, double)> ref;
  double lo, hi;
  bool floating_only;  // result is float even for integer inputs
  bool compare;        // result is bool
  bool nonzero_b;      // keep b away from zero
};

double floor_div_ref(double a, double b) { return std::floor(a / b); }

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](double a, double b) { return a + b; }, -50, 50, false, false, false},
      {"add_alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, 3); }, [](double a, double b) { return a + 3 * b; }, -50, 50, false, false, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, [](double a, double b) { return a - b; }, -50, 50, false, false, false},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, [](double a, double b) { return a * b; }, -50, 50, false, false, false},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, [](double a, double b) { return a / b; }, -50, 50, true, false, true},
      {"div_floor", [](const Tensor& a, const Tensor& b) { return div(a, b, RoundingMode::Floor); }, floor_div_ref, -50, 50, false, false, true},
      {"div_trunc", [](const Tensor& a, const Tensor& b) { return div(a, b, RoundingMode::Trunc); }, [](double a, double b) { return std::trunc(a / b); }, -50, 50, false, false, true},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, [](double a, double b) { return std::max(a, b); }, -50, 50, false, false, false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, [](double a, double b) { return std::min(a, b); }, -50, 50, false, false, false},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(abs(a), b); }, [](double a, double b) { return std::pow(std::fabs(a), b); }, 0, 4, false, false, false},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double a, double b) { return double(a == b); }, -3, 3, false, true, false},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, [](double a, double b) { return double(a != b); }, -3, 3, false, true, false},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double a, double b) { return double(a < b); }, -3, 3, false, true, false},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, [](double a, double b) { return double(a <= b); }, -3, 3, false, true, false},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double a, double b) { return double(a > b); }, -3, 3, false, true, false},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, [](double a, double b) { return double(a >= b); }, -3, 3, false, true, false},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }, [](double a, double b) { return double(a != 0 && b != 0); }, -2, 2, false, true, false},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }, [](double a, double b) { return double(a != 0 || b != 0); }, -2, 2, false, true, false},
      {"logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); }, [](double a, double b) { return double((a != 0) != (b != 0)); }, -2, 2, false, true, false},
  };
  return cases;
}

const Shape kUnaryShapes[] = {{}, {0, 3}, {7}, {3, 5, 4}};

// Integer inputs: round the random doubles so they are exact in the dtype.
std::vector<double> inputs_for(DType t, int64_t n, double lo, double hi, uint64_t seed) {
  auto v = random_values(n, lo, hi, seed);
  if (!is_floating(t))
    for (double& x : v) x = std::round(x);
  return round_to(v, t);
}

double result_rtol(DType t) { return t == kFloat64 ? 1e-12 : default_rtol(t); }

}  // namespace

TEST(Unary, MatchesFloat64ReferenceAcrossDTypesLayoutsAndShapes) {
  for (const auto& c : unary_cases()) {
    for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64}) {
      if (!c.floating_only && std::string(c.name) == "clamp" && t == kBFloat16) continue;
      for (const Shape& shape : kUnaryShapes) {
        for (Layout l : kAllLayouts) {
          SCOPED_TRACE(fmt::format("{} {} {} {}", c.name, dtype_name(t), detail::shape_str(shape), layout_name(l)));
          int64_t n = 1;
          for (int64_t s : shape) n *= s;
          auto in = inputs_for(t, n, c.lo, c.hi, 7);
          Tensor y = c.fn(make_input(in, shape, t, l));
          const DType want = c.floating_only && !is_floating(t) ? kFloat32 : t;
          EXPECT_EQ(y.dtype(), want);
          EXPECT_EQ(y.sizes(), shape);
          std::vector<double> expected(in.size());
          for (size_t i = 0; i < in.size(); ++i) expected[i] = c.ref(in[i]);
          if (!is_floating(want)) {
            EXPECT_TRUE(all_close(y, expected, 0, 0));
          } else {
            const double atol = is_floating(t) && itemsize(t) == 2 ? 1e-2 : c.atol;
            EXPECT_TRUE(all_close(y, expected, result_rtol(want) * 4, atol));
          }
        }
      }
    }
  }
}

TEST(Unary, LargeTensorUsesAllThreadsAndStaysExact) {
  const int64_t n = (1 << 20) + 13;
  auto in = round_to(random_values(n, -4, 4, 3), kFloat32);
  Tensor x = tensor(in).to(kFloat32);
  for (const char* name : {"tanh", "relu", "exp"}) {
    const auto& c = *std::find_if(unary_cases().begin(), unary_cases().end(),
                                  [&](const UnaryCase& u) { return std::string(u.name) == name; });
    std::vector<double> expected(in.size());
    for (size_t i = 0; i < in.size(); ++i) expected[i] = c.ref(in[i]);
    EXPECT_TRUE(all_close(c.fn(x), expected, 1e-6, 1e-6)) << name;
    // Strided view of the same values (every other element of a wider tensor).
    EXPECT_TRUE(all_close(c.fn(make_input(in, {n}, kFloat32, Layout::Strided)), expected, 1e-6, 1e-6)) << name;
  }
}

TEST(Unary, SpecialValues) {
  const double inf = INFINITY, nan = NAN;
  Tensor x = tensor<double>({-inf, -1.0, -0.0, 0.0, 2.0, inf, nan});
  EXPECT_TRUE(all_close(relu(x), {0, 0, 0, 0, 2, inf, nan}, 0, 0));
  EXPECT_TRUE(all_close(sign(x), {-1, -1, 0, 0, 1, 1, 0}, 0, 0));  // PyTorch: sign(nan) = 0
  EXPECT_TRUE(all_close(clamp(x, -1, 1), {-1, -1, 0, 0, 1, 1, nan}, 0, 0));
  EXPECT_TRUE(all_close(sigmoid(x), {0, 1 / (1 + std::exp(1.0)), 0.5, 0.5, 1 / (1 + std::exp(-2.0)), 1, nan}, 1e-15, 0));
  EXPECT_EQ(values_of(isnan(x)), (std::vector<double>{0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(values_of(isinf(x)), (std::vector<double>{1, 0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(values_of(isfinite(x)), (std::vector<double>{0, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(values_of(isnan(tensor<int64_t>({1, 2}))), (std::vector<double>{0, 0}));
  EXPECT_EQ(values_of(logical_not(tensor<double>({0, 2, -0.0}))), (std::vector<double>{1, 0, 1}));
  // Large inputs stay finite where the math is finite.
  // softplus(-100) = 3.7e-44 is subnormal in float32: compare with an absolute bound.
  EXPECT_TRUE(all_close(softplus(tensor<float>({100, -100})), {100, std::log1p(std::exp(-100.0))}, 1e-6, 1e-44));
  EXPECT_TRUE(all_close(silu(tensor<float>({-100})), {-100 / (1 + std::exp(100.0))}, 1e-5, 1e-30));
}

TEST(Unary, InPlaceWritesThroughViews) {
  Tensor base = arange(12, kFloat32).reshape({3, 4}) - 6;
  Tensor col = base.select(1, 1);  // strided view: elements 1, 5, 9 minus 6
  col.relu_();
  EXPECT_EQ(values_of(base), (std::vector<double>{-6, 0, -4, -3, -2, 0, 0, 1, 2, 3, 4, 5}));
  Tensor e = tensor<float>({0, 1});
  e.exp_();
  EXPECT_TRUE(all_close(e, {1, std::exp(1.0)}, 1e-6, 0));
  Tensor ints = tensor<int64_t>({-5, 5});
  ints.clamp_(-1, 1);
  EXPECT_EQ(values_of(ints), (std::vector<double>{-1, 1}));
  ints.neg_();
  EXPECT_EQ(values_of(ints), (std::vector<double>{1, -1}));
  EXPECT_THROW_MSG(exp_(ints), DTypeError, "[exp_] result type float32 cannot be stored in the int64 tensor");
  EXPECT_THROW_MSG(ints.clamp_(0.5, 1), DTypeError, "[clamp_]");
  EXPECT_THROW_MSG(zeros({3}).expand({2, 3}).relu_(), ValueError, "broadcast");
}

TEST(Unary, Errors) {
  EXPECT_THROW_MSG(neg(tensor<bool>({true})), DTypeError, "[neg] negation of a bool tensor");
  EXPECT_THROW_MSG(abs(tensor<bool>({true})), DTypeError, "[abs] is not supported for bool");
  EXPECT_THROW_MSG(gelu(ones({2}), "fast"), ValueError, "[gelu] approximate must be 'none' or 'tanh', got 'fast'");
  EXPECT_THROW_MSG(clamp(ones({2}), std::nullopt, std::nullopt), ValueError, "[clamp] at least one");
}

TEST(Binary, MatchesFloat64ReferenceWithBroadcasting) {
  const std::pair<Shape, Shape> shapes[] = {
      {{3, 5, 4}, {3, 5, 4}}, {{3, 1, 4}, {5, 1}}, {{}, {6}}, {{4, 3}, {}}, {{0, 3}, {1, 3}}, {{1}, {2, 3}}};
  for (const auto& c : binary_cases()) {
    for (DType t : {kFloat32, kFloat64, kBFloat16, kInt32, kInt64}) {
      for (const auto& [sa, sb] : shapes) {
        for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
          SCOPED_TRACE(fmt::format("{} {} {} {} {}", c.name, dtype_name(t), detail::shape_str(sa), detail::shape_str(sb), layout_name(l)));
          int64_t na = 1, nb = 1;
          for (int64_t s : sa) na *= s;
          for (int64_t s : sb) nb *= s;
          auto av = inputs_for(t, na, c.lo, c.hi, 11);
          auto bv = inputs_for(t, nb, c.lo, c.hi, 12);
          if (c.nonzero_b)
            for (double& x : bv) x = x == 0 ? 1 : x;
          if (std::string(c.name) == "pow" && !is_floating(t))
            for (double& x : bv) x = std::fabs(x);
          Tensor y = c.fn(make_input(av, sa, t, l), make_input(bv, sb, t, Layout::Contiguous));
          const Shape out_shape = broadcast_shapes(sa, sb);
          ASSERT_EQ(y.sizes(), out_shape);
          const DType want = c.compare ? kBool : (c.floating_only && !is_floating(t)) ? kFloat32 : t;
          EXPECT_EQ(y.dtype(), want);
          std::vector<double> expected(size_t(y.numel()));
          for (int64_t i = 0; i < y.numel(); ++i) {
            auto idx = unravel(i, out_shape);
            auto pick = [&](const Shape& s) {
              std::vector<int64_t> j(s.size());
              for (size_t d = 0; d < s.size(); ++d) j[d] = s[d] == 1 ? 0 : idx[d + idx.size() - s.size()];
              return ravel(j, s);
            };
            const double a = av[size_t(pick(sa))], b = bv[size_t(pick(sb))];
            double r = c.ref(a, b);
            if (!is_floating(want) && want != kBool && std::string(c.name) == "pow") r = std::round(r);
            expected[size_t(i)] = r;
          }
          const double rtol = is_floating(want) ? result_rtol(want) * 4 : 0;
          const double atol = want == kBFloat16 ? 0.5 : is_floating(want) ? 1e-5 : 0;
          EXPECT_TRUE(all_close(y, expected, rtol, atol));
        }
      }
    }
  }
}

TEST(Binary, IntegerDivisionRoundsLikePython) {
  Tensor a = tensor<int64_t>({7, -7, 7, -7, 0}), b = tensor<int64_t>({2, 2, -2, -2, 3});
  EXPECT_EQ(values_of(div(a, b, RoundingMode::Floor)), (std::vector<double>{3, -4, -4, 3, 0}));
  EXPECT_EQ(values_of(div(a, b, RoundingMode::Trunc)), (std::vector<double>{3, -3, -3, 3, 0}));
  EXPECT_EQ(div(a, b).dtype(), kFloat32);
  EXPECT_TRUE(all_close(div(a, b), {3.5, -3.5, -3.5, 3.5, 0}, 0, 0));
  Tensor f = div(tensor<double>({7.5, -7.5, 1.0}), tensor<double>({2.0, 2.0, 0.0}), RoundingMode::Floor);
  EXPECT_TRUE(all_close(f, {3, -4, INFINITY}, 0, 0));
  EXPECT_THROW_MSG(div(a, tensor<int64_t>({1, 1, 0, 1, 1}), RoundingMode::Floor), ValueError, "[div] integer division by zero");
  EXPECT_THROW_MSG(div(a, Scalar(0), RoundingMode::Trunc), ValueError, "integer division by zero");
}

TEST(Binary, LowestIntegerDividedByMinusOneWrapsInsteadOfTrapping) {
  // x86's idiv traps on lowest / -1 (SIGFPE would kill the process); the quotient wraps to
  // lowest, as two's-complement negation does, and every other value divided by -1 is exact.
  auto check = [&]<class T>(T) {
    SCOPED_TRACE(dtype_name(dtype_of<T>));
    const T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    const Tensor a = tensor<T>({lo, T(lo + 1), T(7), T(-7), T(0), hi});
    const Tensor minus_one = full({6}, -1, dtype_of<T>);
    const std::vector<double> expect{double(lo), double(hi), -7, 7, 0, -double(hi)};
    for (RoundingMode m : {RoundingMode::Floor, RoundingMode::Trunc}) {
      EXPECT_EQ(values_of(div(a, minus_one, m)), expect);
      EXPECT_EQ(values_of(div(a, Scalar(-1), m)), expect);
    }
    EXPECT_EQ(values_of(floor_divide(a, minus_one)), expect);
  };
  check(int32_t()), check(int64_t());
}

TEST(Binary, NegativeValuesWrapIntoUint8AsPyTorchConverts) {
  // PyTorch's CPU conversion of a floating value to uint8 keeps the low byte of its int32
  // truncation: -1.0 -> 255, 300.0 -> 44, -129.0 -> 127.
  const std::vector<double> v{-1, -3, 300, -129, -2.75, -254, 255, 0.5};  // exact in bf16
  std::vector<double> wrapped;
  for (double x : v) wrapped.push_back(double(((int64_t(x) % 256) + 256) % 256));
  for (DType from : {kFloat32, kFloat64, kBFloat16, kFloat16})
    EXPECT_EQ(values_of(tensor<double>(v).to(from).to(kUInt8)), wrapped) << dtype_name(from);
  // The same conversion under arange's values and add's alpha.
  std::vector<double> range;
  for (int64_t i = -3; i < 3; ++i) range.push_back(double((i + 256) % 256));
  EXPECT_EQ(values_of(arange(-3, 3, 1, kUInt8)), range);
  const Tensor a = tensor<uint8_t>({5, 200, 0}), b = tensor<uint8_t>({3, 100, 1});
  EXPECT_EQ(values_of(add(a, b, -1)), (std::vector<double>{2, 100, 255}));
  EXPECT_EQ(values_of(sub(a, b, -1)), (std::vector<double>{8, 44, 1}));
}

TEST(Unary, IntegerClampBoundsMustFitTheDtype) {
  // As PyTorch: a bound past the dtype is an error, except that uint8 takes negative bounds
  // down to -255, which wrap (min = -1 is 255, so everything becomes 255).
  const Tensor u = tensor<uint8_t>({5, 200});
  EXPECT_EQ(values_of(clamp(u, Scalar(-1), std::nullopt)), (std::vector<double>{255, 255}));
  EXPECT_THROW_MSG(
      clamp(u, Scalar(-256), std::nullopt),
      ValueError,
      "[clamp] min = -256 cannot be converted to uint8 without overflow");
  const Tensor i = tensor<int32_t>({5, -7});
  EXPECT_THROW_MSG(
      clamp(i, std::nullopt, Scalar(int64_t(1) << 40)),
      ValueError,
      "[clamp] max = 1099511627776 cannot be converted to int32 without overflow");
  Tensor j = i.clone();
  EXPECT_THROW_MSG(
      clamp_(j, Scalar(int64_t(-1) << 40), std::nullopt),
      ValueError,
      "[clamp] min = -1099511627776 cannot be converted to int32 without overflow");
  EXPECT_EQ(values_of(j), values_of(i));  // nothing written
  EXPECT_EQ(values_of(clamp(i, Scalar(-2147483648LL), Scalar(2147483647LL))), values_of(i));
  // A float bound promotes the tensor instead.
  EXPECT_EQ(clamp(i, Scalar(1.0e12), std::nullopt).dtype(), kFloat32);
}

TEST(Binary, NaNPropagatesThroughMaximumAndMinimum) {
  Tensor a = tensor<double>({NAN, 1, 2}), b = tensor<double>({0, NAN, 1});
  EXPECT_TRUE(all_close(maximum(a, b), {NAN, NAN, 2}, 0, 0));
  EXPECT_TRUE(all_close(minimum(a, b), {NAN, NAN, 1}, 0, 0));
  EXPECT_EQ(values_of(eq(a, a)), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values_of(ne(a, a)), (std::vector<double>{1, 0, 0}));
}

TEST(Binary, ScalarOperandsPromoteByCategory) {
  Tensor i = tensor<int32_t>({1, 2, 3});
  EXPECT_EQ((i + 2).dtype(), kInt32);
  EXPECT_EQ((i * 2.5).dtype(), kFloat32);
  EXPECT_TRUE(all_close(i * 2.5, {2.5, 5, 7.5}, 0, 0));
  EXPECT_EQ((tensor<bool>({true}) + 1).dtype(), kInt64);
  EXPECT_EQ((ones({2}, kFloat16) * 3.0).dtype(), kFloat16);
  EXPECT_EQ((i / 2).dtype(), kFloat32);
  EXPECT_TRUE(all_close(10 - i, {9, 8, 7}, 0, 0));
  EXPECT_TRUE(all_close(1.0 / tensor<float>({2, 4}), {0.5, 0.25}, 0, 0));
  EXPECT_EQ(values_of(pow(i, 2)), (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(pow(i, 2).dtype(), kInt32);
  EXPECT_TRUE(all_close(pow(2.0, tensor<float>({0, 3, -1})), {1, 8, 0.5}, 0, 0));
  EXPECT_EQ((ones({2}, kFloat32) + zeros({}, kFloat64)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kInt32) + zeros({}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((ones({2}, kBFloat16) + ones({2}, kFloat16)).dtype(), kFloat32);
  EXPECT_EQ(values_of(tensor<bool>({true, false}) + tensor<bool>({true, true})), (std::vector<double>{1, 1}));
  EXPECT_THROW_MSG(pow(i, -1), ValueError, "[pow] integers to negative integer powers are not allowed");
  EXPECT_THROW_MSG(sub(tensor<bool>({true}), tensor<bool>({true})), DTypeError, "[sub] subtraction with bool tensors");
}

TEST(Binary, InPlaceRules) {
  Tensor x = arange(6, kFloat32).reshape({2, 3});
  Tensor xt = x.t();  // non-contiguous destination
  xt.add_(tensor<float>({10, 20}));  // broadcasts over the rows of x.t()
  EXPECT_EQ(values_of(x), (std::vector<double>{10, 11, 12, 23, 24, 25}));
  x.mul_(2).sub_(1);
  EXPECT_EQ(values_of(x), (std::vector<double>{19, 21, 23, 45, 47, 49}));
  Tensor i = tensor<int64_t>({1, 2});
  i += tensor<int32_t>({1, 1});
  EXPECT_EQ(values_of(i), (std::vector<double>{2, 3}));
  Tensor f = tensor<float>({1, 2});
  f += tensor<double>({0.5, 0.25});  // float64 result stored into float32
  EXPECT_TRUE(all_close(f, {1.5, 2.25}, 0, 0));
  EXPECT_THROW_MSG(i.add_(0.5), DTypeError, "[add_] result type float32 cannot be cast to the int64 tensor");
  EXPECT_THROW_MSG(i.div_(2), DTypeError, "[div_]");
  EXPECT_THROW_MSG(ones({3}).add_(ones({2, 3})), ShapeError, "[add_] result of shape [2, 3] cannot be written into a tensor of shape [3]");
  // Self-overlap: a += a.t() reads the original values.
  Tensor s = arange(4, kFloat64).reshape({2, 2});
  s += s.t();
  EXPECT_EQ(values_of(s), (std::vector<double>{0, 3, 3, 6}));
}

TEST(Binary, ShapeErrorsNameBothShapes) {
  EXPECT_THROW_MSG(add(ones({2, 3}), ones({4})), ShapeError,
                   "[add] shapes [2, 3] and [4] cannot be broadcast together (dimension 1: 3 vs 4)");
  EXPECT_THROW_MSG(ones({2}) == ones({3}), ShapeError, "[eq] shapes [2] and [3]");
}

TEST(Where, SelectsAndPromotes) {
  Tensor c = tensor<bool>({true, false, true});
  Tensor a = tensor<int32_t>({1, 2, 3});
  EXPECT_EQ(values_of(where(c, a, tensor<double>({-1, -2, -3}))), (std::vector<double>{1, -2, 3}));
  EXPECT_EQ(where(c, a, tensor<double>({-1, -2, -3})).dtype(), kFloat64);
  Tensor w = where(c.view({3, 1}), a, Scalar(0));  // broadcast to [3, 3]
  EXPECT_EQ(w.sizes(), (Shape{3, 3}));
  EXPECT_EQ(values_of(w), (std::vector<double>{1, 2, 3, 0, 0, 0, 1, 2, 3}));
  EXPECT_EQ(where(c, Scalar(1.5), a).dtype(), kFloat32);
  EXPECT_THROW_MSG(where(a, a, a), DTypeError, "[where] condition must be a bool tensor, got int32");
}

TEST(Compare, EqualAndAllclose) {
  EXPECT_TRUE(equal(arange(5), arange(5)));
  EXPECT_FALSE(equal(arange(5), arange(4)));
  EXPECT_TRUE(allclose(tensor<float>({1, 2}), tensor<float>({1, 2.00001f})));
  EXPECT_FALSE(allclose(tensor<float>({1, 2}), tensor<float>({1, 2.1f})));
  EXPECT_FALSE(allclose(tensor<double>({NAN}), tensor<double>({NAN})));
  EXPECT_TRUE(allclose(tensor<double>({NAN, INFINITY}), tensor<double>({NAN, INFINITY}), 1e-5, 1e-8, true));
}

// Results keep a dense permuted layout of their (first full-shape) input, as PyTorch's
// TensorIterator does; values are those of the same ops on contiguous copies.
TEST(Layout, ResultsKeepTheInputsMemoryFormat) {
  const Shape nchw{2, 3, 4, 5};
  auto channels_last = [](const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); };
  const Shape cl_strides{60, 1, 15, 3};
  Tensor x = random_tensor(nchw, -1, 1, 7), y = random_tensor(nchw, -1, 1, 8);
  Tensor xc = channels_last(x), yc = channels_last(y);
  Tensor bias = random_tensor({1, 3, 1, 1}, -1, 1, 9);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> ops = {
      {"relu", [](const Tensor& a, const Tensor&) { return relu(a); }},
      {"exp", [](const Tensor& a, const Tensor&) { return exp(a); }},
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"mul scalar", [](const Tensor& a, const Tensor&) { return a * 3.0; }},
      {"add broadcast", [&](const Tensor& a, const Tensor&) { return a + bias; }},
      {"where", [](const Tensor& a, const Tensor& b) { return where(a > 0, a, b); }},
      {"to float64", [](const Tensor& a, const Tensor&) { return a.to(kFloat64) * 1.0; }},
  };
  for (const auto& [name, op] : ops) {
    Tensor r = op(xc, yc);
    EXPECT_EQ(r.strides(), cl_strides) << name;
    EXPECT_EQ(values_of(r), values_of(op(x, y))) << name;
  }
  // A contiguous first operand decides for a mixed pair; so does a channels-last one.
  EXPECT_TRUE((x + yc).is_contiguous());
  EXPECT_EQ((xc + y).strides(), cl_strides);
  EXPECT_EQ(values_of(xc + y), values_of(x + y));
  // A transposed matrix stays transposed; a strided slice (not dense) gives a contiguous result.
  Tensor m = random_tensor({6, 4}, -1, 1, 10);
  EXPECT_EQ(neg(m.t()).strides(), (Shape{1, 4}));
  EXPECT_EQ(values_of(neg(m.t())), values_of(neg(m.t().contiguous())));
  EXPECT_TRUE(neg(m.slice(0, 0, 6, 2)).is_contiguous());
}
