// x^y for floats, branch-free so that the CPU loops calling it become vector code (std::pow
// is a scalar libm call per element: x^2.5 over [4096,4096] took 77 ms at one thread against
// PyTorch's 35). Host code only: CUDA kernels keep the device's powf.
//
// Method. e^(y ln|x|) computed in float64 and rounded to float once: ln|x| from the bits of
// |x| (2^e m, m in [sqrt(1/2), sqrt(2))) as e ln2 + 2 atanh((m - 1) / (m + 1)) with the atanh
// series to t^13 (relative error below 2^-39 for |t| <= 0.1716), and e^z as 2^k e^r with
// |r| <= ln2 / 2 and the exponential series to r^9 (below 2^-37). Wherever the float result is
// finite and nonzero (|y ln|x|| < 104), e^z then carries a relative error below 2^-32 before
// the final rounding, so the result is the correctly rounded float except within 2^-8 ulp of
// a halfway point, where it may be the other neighbour: within 1 ulp everywhere. The special
// values of C's powf (zeros, infinities, NaN, negative bases) are selected after the fact.
// Float64 keeps the error analysis short; it costs the vector loop half its width.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ignis::kernels {
namespace pow_detail {

/// ln(a) in float64 for a finite positive float a (subnormals included: float64 holds them as
/// normal numbers).
[[gnu::always_inline]] inline double log_of_positive_float(float a) {
  const uint64_t bits = std::bit_cast<uint64_t>(double(a));
  // The biased exponent as a double without an integer conversion: 2^52 + E read as a double
  // with E in its low mantissa bits, minus 2^52.
  const double biased = std::bit_cast<double>((bits >> 52) | 0x4330000000000000ull) -
                        4503599627370496.0;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  double e = biased - 1023.0;
  const bool upper = m > 1.41421356237309505;  // m in [sqrt 2, 2): m / 2 and e + 1
  m = upper ? m * 0.5 : m;
  e = upper ? e + 1.0 : e;
  const double t = (m - 1.0) / (m + 1.0);
  const double s = t * t;
  double p = 1.0 / 13;
  p = p * s + 1.0 / 11;
  p = p * s + 1.0 / 9;
  p = p * s + 1.0 / 7;
  p = p * s + 1.0 / 5;
  p = p * s + 1.0 / 3;
  const double log_m = 2.0 * t + 2.0 * t * s * p;
  return e * 0.693147180559945309 + log_m;
}

/// e^z in float64 for |z| <= 200 (or NaN).
[[gnu::always_inline]] inline double exp_in_range(double z) {
  constexpr double kLog2e = 1.44269504088896341;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 32 significant bits: k kLn2Hi exact
  constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ln2 - kLn2Hi
  constexpr double kRound = 6755399441055744.0;          // 1.5 * 2^52: adding it rounds
  const double t = z * kLog2e + kRound;
  const double k = t - kRound;
  const double r = (z - k * kLn2Hi) - k * kLn2Lo;
  double p = 1.0 / 362880;
  p = p * r + 1.0 / 40320;
  p = p * r + 1.0 / 5040;
  p = p * r + 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // t's low bits hold k (|k| <= 289); 2^k is built in the exponent field.
  const uint64_t k_bits = std::bit_cast<uint64_t>(t) - std::bit_cast<uint64_t>(kRound);
  return p * std::bit_cast<double>((k_bits + 1023u) << 52);
}

}  // namespace pow_detail

/// x^y for float within 1 ulp of the correctly rounded result, with powf's special values:
/// x^0 = 1 and 1^y = 1 (even for NaN), (-1)^±inf = 1, ±0 and ±inf to odd integer powers keep
/// their sign, a finite negative x to a non-integer power is NaN, other NaN operands give NaN.
[[gnu::always_inline]] inline float fast_pow(float x, float y) {
  constexpr float kInf = __builtin_inff();
  const float ax = std::fabs(x), ay = std::fabs(y);
  double l = pow_detail::log_of_positive_float(ax);
  l = ax == 0.0f ? -__builtin_inf() : l;
  l = ax == kInf ? __builtin_inf() : l;
  double z = double(y) * l;  // 0 * inf (y = 0, or x = 1 with y = inf) is NaN: selected below
  // e^200 and e^-200 are still inf and 0 in float; NaN compares false and passes.
  z = z > 200.0 ? 200.0 : z;
  z = z < -200.0 ? -200.0 : z;
  float r = float(pow_detail::exp_in_range(z));
  // The conditions combine with & and |, not && and ||: short-circuit branches keep GCC from
  // vectorising the calling loop.
  const bool y_integer = std::trunc(y) == y;  // true for ±inf, false for NaN
  // Every float of magnitude 2^24 or more is even.
  const bool y_small = ay < 16777216.0f;
  const uint32_t y_odd = uint32_t(y_integer & y_small) & uint32_t(int32_t(y_small ? y : 0.0f));
  // A negative x (-0 and -inf included) to an odd integer power: the result's sign flips.
  const uint32_t flip = std::bit_cast<uint32_t>(x) & (y_odd << 31);
  r = std::bit_cast<float>(std::bit_cast<uint32_t>(r) ^ flip);
  r = (x < 0.0f) & (x > -kInf) & !y_integer ? __builtin_nanf("") : r;
  r = (x != x) | (y != y) ? __builtin_nanf("") : r;
  r = (y == 0.0f) | (x == 1.0f) | ((x == -1.0f) & (ay == kInf)) ? 1.0f : r;
  return r;
}

}  // namespace ignis::kernels
