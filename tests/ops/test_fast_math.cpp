// The fast float math of src/kernels/fast_math.h against libm in float64 rounded to float:
// each function on a sweep of the float bit patterns (every sign and exponent, subnormals,
// infinities, NaN) and its special values.
#include <cmath>
#include <limits>

#include "kernels/fast_math.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

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

}  // namespace
}  // namespace ignis::testing
