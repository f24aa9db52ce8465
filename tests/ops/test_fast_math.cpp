// The fast float math of src/kernels/fast_math.h, fast_trig.h and fast_pow.h against libm in
// float64 rounded to float: each function on a sweep of the float bit patterns (every sign
// and exponent, subnormals, infinities, NaN), its special values, and the ops built on them
// run through the engine's loops on the same kind of sweep (those loops are the vectorised
// copies, AVX-512 where the CPU has it; tests/CMakeLists.txt runs them again without).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/fast_math.h"
#include "kernels/fast_pow.h"
#include "kernels/fast_trig.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

/// Distance in units in the last place between two floats of any sign (-0 and +0 are one
/// value; 0 between two NaNs, the largest distance between a NaN and a number).
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT32_MAX;
  auto ordered = [](float f) {
    const int64_t i = int32_t(detail::float_bits(f));
    return i < 0 ? int64_t(INT32_MIN) - i : i;  // -0 and +0 both map to 0
  };
  return std::abs(ordered(a) - ordered(b));
}

TEST(FastMath, ExpWithinTwoUlp) {
  int64_t worst = 0;
  float worst_x = 0;
  // Every 97th float between -104 and 89 (covering subnormal results and overflow), both signs.
  for (uint32_t bits = 0; bits < 0x42b20000u; bits += 97) {
    for (float x : {detail::bits_float(bits), -detail::bits_float(bits)}) {
      if (x < -104.0f) continue;
      const float expected = float(std::exp(double(x)));
      const int64_t d = ulp_distance(kernels::fast_exp(x), expected);
      if (d > worst) worst = d, worst_x = x;
    }
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
  EXPECT_EQ(kernels::fast_exp(0.0f), 1.0f);
  EXPECT_EQ(kernels::fast_exp(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(
      kernels::fast_exp(std::numeric_limits<float>::infinity()),
      std::numeric_limits<float>::infinity());
  EXPECT_EQ(kernels::fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(kernels::fast_exp(-104.0f), 0.0f);
  EXPECT_EQ(kernels::fast_exp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(kernels::fast_exp(std::numeric_limits<float>::quiet_NaN())));
}

// fast_tanh and fast_log against libm in double rounded to float, on every 251st bit pattern
// (every sign and exponent, subnormals, infinities and NaNs; 2 ulp was also the maximum over
// all 2^32 floats, with and without FMA contraction).
TEST(FastMath, TanhAndLogWithinTwoUlp) {
  int64_t worst_tanh = 0, worst_log = 0;
  float at_tanh = 0, at_log = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    const float x = detail::bits_float(uint32_t(bits));
    int64_t d = ulp_distance(kernels::fast_tanh(x), float(std::tanh(double(x))));
    if (d > worst_tanh) worst_tanh = d, at_tanh = x;
    d = ulp_distance(kernels::fast_log(x), float(std::log(double(x))));
    if (d > worst_log) worst_log = d, at_log = x;
  }
  EXPECT_LE(worst_tanh, 2) << "tanh at x = " << at_tanh;
  EXPECT_LE(worst_log, 2) << "log at x = " << at_log;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kernels::fast_tanh(inf), 1.0f);
  EXPECT_EQ(kernels::fast_tanh(-inf), -1.0f);
  EXPECT_TRUE(std::signbit(kernels::fast_tanh(-0.0f)));
  EXPECT_EQ(kernels::fast_log(1.0f), 0.0f);
  EXPECT_EQ(kernels::fast_log(0.0f), -inf);
  EXPECT_EQ(kernels::fast_log(-0.0f), -inf);
  EXPECT_EQ(kernels::fast_log(inf), inf);
  EXPECT_TRUE(std::isnan(kernels::fast_log(-1.0f)));
  EXPECT_TRUE(std::isnan(kernels::fast_log(-inf)));
  EXPECT_TRUE(std::isnan(kernels::fast_log(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_NEAR(
      kernels::fast_log(std::numeric_limits<float>::denorm_min()), std::log(0x1p-149), 1e-5);
}

TEST(FastMath, ErfcAndNormalCdfKeepTheirRelativeAccuracyInTheTails) {
  int64_t worst = 0;
  float worst_u = 0;
  // Every 61st float of [0, 9] (erfc stays a normal float up to about 9.1).
  for (uint32_t bits = 0; bits <= detail::float_bits(9.0f); bits += 61) {
    const float u = detail::bits_float(bits);
    const int64_t d = ulp_distance(kernels::fast_erfc_nonnegative(u), float(std::erfc(double(u))));
    if (d > worst) worst = d, worst_u = u;
  }
  EXPECT_LE(worst, 8) << "at u = " << worst_u;  // 6 measured
  // Phi over [-13, 13]: the lower tail relative to itself (where 1 + erf would cancel), the
  // upper part within a few ulp of 1.
  double worst_relative = 0;
  for (float x = -13.0f; x <= 13.0f; x += 0.001f) {
    const double exact = 0.5 * std::erfc(-double(x) / std::sqrt(2.0));
    const double got = kernels::normal_cdf(x);
    if (exact > 1e-37) worst_relative = std::max(worst_relative, std::abs(got - exact) / exact);
  }
  // x / sqrt(2) is rounded before erfc: that costs up to x^2 * 2^-24 relative at -13.
  EXPECT_LT(worst_relative, 2e-5);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kernels::normal_cdf(-inf), 0.0f);
  EXPECT_EQ(kernels::normal_cdf(inf), 1.0f);
  EXPECT_EQ(kernels::normal_cdf(0.0f), 0.5f);
  EXPECT_EQ(kernels::fast_erfc_nonnegative(20.0f), 0.0f);
  EXPECT_TRUE(std::isnan(kernels::normal_cdf(std::numeric_limits<float>::quiet_NaN())));
}

// Bounds measured over all 2^32 floats: expm1 1 ulp, log1p 2 (with and without FMA
// contraction), sin and cos 1 with FMA contraction and 2 without (at arguments near 5e8).
TEST(FastMath, Expm1AndLog1pWithinTwoUlp) {
  int64_t worst_expm1 = 0, worst_log1p = 0;
  float at_expm1 = 0, at_log1p = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    const float x = detail::bits_float(uint32_t(bits));
    int64_t d = ulp_distance(kernels::fast_expm1(x), float(std::expm1(double(x))));
    if (d > worst_expm1) worst_expm1 = d, at_expm1 = x;
    d = ulp_distance(kernels::fast_log1p(x), float(std::log1p(double(x))));
    if (d > worst_log1p) worst_log1p = d, at_log1p = x;
  }
  EXPECT_LE(worst_expm1, 2) << "expm1 at x = " << at_expm1;
  EXPECT_LE(worst_log1p, 2) << "log1p at x = " << at_log1p;
  EXPECT_TRUE(std::signbit(kernels::fast_expm1(-0.0f)));
  EXPECT_EQ(kernels::fast_expm1(1e-30f), 1e-30f);
  EXPECT_EQ(kernels::fast_expm1(89.0f), kInfF);
  EXPECT_EQ(kernels::fast_expm1(kInfF), kInfF);
  EXPECT_EQ(kernels::fast_expm1(-100.0f), -1.0f);
  EXPECT_EQ(kernels::fast_expm1(-kInfF), -1.0f);
  EXPECT_TRUE(std::isnan(kernels::fast_expm1(kNaNF)));
  EXPECT_TRUE(std::signbit(kernels::fast_log1p(-0.0f)));
  EXPECT_EQ(kernels::fast_log1p(1e-30f), 1e-30f);
  EXPECT_EQ(kernels::fast_log1p(-1.0f), -kInfF);
  EXPECT_EQ(kernels::fast_log1p(kInfF), kInfF);
  EXPECT_TRUE(std::isnan(kernels::fast_log1p(-2.0f)));
  EXPECT_TRUE(std::isnan(kernels::fast_log1p(-kInfF)));
  EXPECT_TRUE(std::isnan(kernels::fast_log1p(kNaNF)));
}

TEST(FastMath, SinAndCosWithinTwoUlpOverTheWholeRange) {
  int64_t worst_sin = 0, worst_cos = 0;
  float at_sin = 0, at_cos = 0;
  auto check = [&](float x) {
    int64_t d = ulp_distance(kernels::fast_sin(x), float(std::sin(double(x))));
    if (d > worst_sin) worst_sin = d, at_sin = x;
    d = ulp_distance(kernels::fast_cos(x), float(std::cos(double(x))));
    if (d > worst_cos) worst_cos = d, at_cos = x;
  };
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251)
    check(detail::bits_float(uint32_t(bits)));
  // The floats nearest to multiples of pi/2 up to 2^20, where the reduction cancels most: the
  // result's relative accuracy rests on the bits of pi/2 far below the float's own.
  // Every such multiple below kTrigSmallLimit (the float reduction's range), then a spread.
  for (int k = 1; k < (1 << 20); k += k < 4096 ? 1 : 997) {
    const float near = float(k * 1.57079632679489661923);
    for (float x : {std::nextafter(near, 0.0f), near, std::nextafter(near, kInfF)}) check(x);
  }
  EXPECT_LE(worst_sin, 2) << "sin at x = " << at_sin;
  EXPECT_LE(worst_cos, 2) << "cos at x = " << at_cos;
  EXPECT_TRUE(std::signbit(kernels::fast_sin(-0.0f)));
  EXPECT_EQ(kernels::fast_sin(0.0f), 0.0f);
  EXPECT_EQ(kernels::fast_cos(-0.0f), 1.0f);
  EXPECT_EQ(
      kernels::fast_sin(std::numeric_limits<float>::denorm_min()),
      std::numeric_limits<float>::denorm_min());
  for (float special : {kInfF, -kInfF, kNaNF}) {
    EXPECT_TRUE(std::isnan(kernels::fast_sin(special)));
    EXPECT_TRUE(std::isnan(kernels::fast_cos(special)));
  }
}

// sin and cos through the engine's contiguous loop give the bits of its strided loop, which
// calls fast_sin and fast_cos per element, whatever the blocks hold: blocks of small arguments
// only (the float reduction), of arguments below 2^26 (float64, no table) and with larger
// ones (the table) each take their own loop (src/cpu/unary.cpp). (Not against fast_sin called
// here: this file is compiled without the library's FMA, which changes the last bits.)
TEST(FastMath, SinAndCosGiveTheSameBitsInEveryLoop) {
  std::vector<float> values;
  auto spread = [&](float lo, float hi, int count) {
    for (int i = 0; i < count; ++i) values.push_back(lo + (hi - lo) * float(i) / float(count));
  };
  spread(-6000.0f, 6000.0f, 4096);  // small blocks
  spread(-1e7f, 1e7f, 4096);        // mostly tier 1
  spread(-1e30f, 1e30f, 4096);      // mostly the table
  for (int i = 0; i < 4096; ++i) {  // all tiers in each block, and the special values
    const float v[] = {0.5f * float(i), 6431.9f + float(i), 7e7f * float(i), -0.0f, kInfF, kNaNF};
    values.push_back(v[i % 6]);
  }
  const int64_t n = int64_t(values.size());
  const Tensor x = from_blob(values.data(), {n}, DType::Float32).clone();
  const Tensor pairs = x.reshape({n / 2, 2});  // its columns: views of stride 2
  for (bool is_sin : {true, false}) {
    auto f = [&](const Tensor& t) { return is_sin ? sin(t) : cos(t); };
    const std::vector<double> got = values_of(f(x));
    const std::vector<double> even = values_of(f(pairs.select(1, 0)));
    const std::vector<double> odd = values_of(f(pairs.select(1, 1)));
    for (int64_t i = 0; i < n; ++i) {
      const double want = (i % 2 == 0 ? even : odd)[size_t(i / 2)], g = got[size_t(i)];
      // The same bits, or both NaN (whose payload may differ).
      const bool same = std::isnan(want)
                            ? std::isnan(g)
                            : detail::float_bits(float(g)) == detail::float_bits(float(want));
      ASSERT_TRUE(same) << (is_sin ? "sin" : "cos") << " of " << values[size_t(i)] << ": " << g
                        << " contiguous, " << want << " strided";
    }
  }
}

/// The exponents the pow tests use: the common ones, ones that make x^y overflow or underflow
/// for most x, and a spread of others.
std::vector<float> pow_exponents() {
  std::vector<float> ys = {2.5f, 0.5f, -0.5f, 3.0f, -1.0f, 1.0f / 3, -2.0f, 7.0f, 0.1f,
                           100.0f, -100.0f, 1e-3f, 20.5f, -37.25f, 1e6f, -1e-6f};
  for (int i = 0; i < 16; ++i) ys.push_back(float(-12.0 + 1.6 * i + 0.0137 * i * i));
  return ys;
}

// Against pow in float64 rounded to float; the worst over all 2^32 bases was 1 ulp for each of
// these exponents.
TEST(FastMath, PowWithinOneUlp) {
  int64_t worst = 0;
  float at_x = 0, at_y = 0;
  for (float y : pow_exponents()) {
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099) {
      const float x = detail::bits_float(uint32_t(bits));
      const float want = float(std::pow(double(x), double(y)));
      const int64_t d = ulp_distance(kernels::fast_pow(x, y), want);
      if (d > worst) worst = d, at_x = x, at_y = y;
    }
  }
  EXPECT_LE(worst, 1) << "pow at x = " << at_x << ", y = " << at_y;
}

// C's special cases of powf (signed zeros, infinities, NaN, negative bases to integer and
// non-integer powers, 1^NaN and NaN^0): the same value, NaN or not, and the same sign as the
// C library's powf.
TEST(FastMath, PowSpecialValuesAreThoseOfPowf) {
  const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, 3.0f, -3.0f,
                          kInfF, -kInfF, kNaNF, std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min(), 2.5f, -2.5f, 1e30f, -1e30f,
                          16777216.0f, -16777216.0f, 16777215.0f, -33554432.0f};
  for (float x : values) {
    for (float y : values) {
      const float got = kernels::fast_pow(x, y), want = std::pow(x, y);
      const bool same = std::isnan(want) ? std::isnan(got)
                                         : std::signbit(got) == std::signbit(want) &&
                                               ulp_distance(got, want) <= 1;
      EXPECT_TRUE(same) << x << "^" << y << ": " << got << ", powf " << want;
    }
  }
}

// The unary ops built on these functions, through the engine's contiguous float loops, on every
// 4093rd bit pattern (about a million values, so several threads share them), against libm in
// float64 rounded to float.
TEST(FastMath, UnaryOpsKeepTheBoundsInTheVectorLoops) {
  std::vector<float> values;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4093)
    values.push_back(detail::bits_float(uint32_t(bits)));
  const Tensor x = from_blob(values.data(), {int64_t(values.size())}, DType::Float32).clone();
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
    double (*reference)(double);
    int64_t bound;
  };
  const Case cases[] = {
      {"exp", [](const Tensor& t) { return exp(t); }, [](double v) { return std::exp(v); }, 2},
      {"expm1",
       [](const Tensor& t) { return expm1(t); },
       [](double v) { return std::expm1(v); },
       2},
      {"log", [](const Tensor& t) { return log(t); }, [](double v) { return std::log(v); }, 2},
      {"log1p",
       [](const Tensor& t) { return log1p(t); },
       [](double v) { return std::log1p(v); },
       2},
      {"sin", [](const Tensor& t) { return sin(t); }, [](double v) { return std::sin(v); }, 2},
      {"cos", [](const Tensor& t) { return cos(t); }, [](double v) { return std::cos(v); }, 2},
      {"tanh", [](const Tensor& t) { return tanh(t); }, [](double v) { return std::tanh(v); }, 2},
      // softplus composes exp and log1p, each within 2 ulp.
      {"softplus",
       [](const Tensor& t) { return softplus(t, 1, 20); },
       [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); },
       4},
  };
  for (const Case& c : cases) {
    const std::vector<double> got = values_of(c.op(x));
    int64_t worst = 0;
    float at = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t d = ulp_distance(float(got[i]), float(c.reference(double(values[i]))));
      if (d > worst) worst = d, at = values[i];
    }
    EXPECT_LE(worst, c.bound) << c.name << " at x = " << at;
  }
}

// pow through the engine's binary loops (the vectorised AVX-512 copy where the CPU has it):
// tensor^scalar and scalar^tensor (a broadcast operand of stride 0) and tensor^tensor.
TEST(FastMath, PowKeepsItsBoundInTheVectorLoops) {
  std::vector<float> bases;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 65521)
    bases.push_back(detail::bits_float(uint32_t(bits)));
  const int64_t n = int64_t(bases.size());
  const Tensor x = from_blob(bases.data(), {n}, DType::Float32).clone();
  int64_t worst = 0;
  std::string at;
  auto check = [&](const Tensor& got, auto base_at, auto exponent_at, const char* form) {
    const std::vector<double> v = values_of(got);
    for (int64_t i = 0; i < n; ++i) {
      const float b = base_at(i), e = exponent_at(i);
      const int64_t d = ulp_distance(float(v[size_t(i)]), float(std::pow(double(b), double(e))));
      if (d > worst)
        worst = d, at = std::string(form) + " " + std::to_string(b) + "^" + std::to_string(e);
    }
  };
  for (float y : pow_exponents()) {
    check(pow(x, y), [&](int64_t i) { return bases[size_t(i)]; }, [&](int64_t) { return y; },
          "tensor^scalar");
  }
  // Scalar bases to the powers held in a tensor: the bit patterns, as exponents.
  for (float b : {2.0f, 0.5f, -3.0f, 1.0f, 10.0f}) {
    check(pow(Scalar(double(b)), x), [&](int64_t) { return b; },
          [&](int64_t i) { return bases[size_t(i)]; }, "scalar^tensor");
  }
  // Bases and exponents both varying: each base to an exponent from the list in turn.
  const std::vector<float> ys = pow_exponents();
  std::vector<float> exponents(bases.size());
  for (size_t i = 0; i < exponents.size(); ++i) exponents[i] = ys[i % ys.size()];
  const Tensor e = from_blob(exponents.data(), {n}, DType::Float32).clone();
  check(pow(x, e), [&](int64_t i) { return bases[size_t(i)]; },
        [&](int64_t i) { return exponents[size_t(i)]; }, "tensor^tensor");
  EXPECT_LE(worst, 1) << at;
}

}  // namespace
}  // namespace ignis::testing
