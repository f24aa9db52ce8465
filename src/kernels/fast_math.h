// Fast, branch-free float math for hot loops (softmax, GELU, the float unary ops exp, expm1,
// log, log1p, tanh, sigmoid, SiLU, softplus), host and device alike. std::exp does not
// vectorise without -ffast-math (each element is a libm call: a [4096,4096] tanh took 330 ms
// against PyTorch's 21); these use only multiplies, adds, divisions, compares and integer bit
// operations, so a `#pragma omp simd` loop calling them becomes vector code. Each function's
// comment gives its error bound; tests/ops/test_fast_math.cpp checks it on a sweep of the
// floats. Sine and cosine are in fast_trig.h.
#pragma once

#include <cmath>
#include <cstdint>

#include "ignis/half.h"
#include "kernels/host_device.h"

namespace ignis::kernels {

/// fast_exp for |xc| <= 104 (or NaN), without the clamp: for callers that bound the argument
/// themselves.
IGNIS_HOST_DEVICE_ALWAYS_INLINE float fast_exp_in_range(float xc) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;       // 9 significant bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;    // ln2 - kLn2Hi
  constexpr float kRound = 12582912.0f;        // 1.5 * 2^23: adding it rounds to an integer
  const float t = xc * kLog2e + kRound;
  const float n = t - kRound;
  // t = 2^23 + 2^22 + n, so its low mantissa bits hold n + 2^22 (no float->int conversion).
  const int32_t ni = int32_t(detail::float_bits(t) & 0x7fffffu) - 0x400000;
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const float s1 = detail::bits_float(uint32_t(n1 + 127) << 23);
  const float s2 = detail::bits_float(uint32_t(n2 + 127) << 23);
  return p * s1 * s2;
}

/// e^x for float within 2 ulp of the correctly rounded result over the whole range (1 ulp
/// measured, with and without FMA contraction)
/// (tests/ops/test_reduce.cpp measures it): inf above ln(FLT_MAX), subnormals rounded once,
/// 0 below ln(2^-150), NaN stays NaN.
/// Method: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite split of ln2), e^r by a degree-7
/// polynomial, then 2^n built in the exponent bits in two halves so 2^-150..2^150 never leaves
/// the normal range before the final rounding.
/// Overflow needs no test: 2^75 * 2^75 * p is already inf in float.
IGNIS_HOST_DEVICE_ALWAYS_INLINE float fast_exp(float x) {
  // Clamp to [-104, 104] so n stays in [-150, 150]; the clamped ends still overflow to inf or
  // round to 0 as they should. One comparison only: two in a row let the compiler split the
  // loop body into branches it then cannot vectorise (it may not speculate a float compare).
  // A comparison with NaN is false, so NaN passes through.
  return fast_exp_in_range(std::fabs(x) > 104.0f ? std::copysign(104.0f, x) : x);
}

/// tanh(x) for float, within 2 ulp of the correctly rounded result (NaN stays NaN, -0 stays
/// -0, infinities give ±1).
/// Method: for |x| < 0.55, x + x^3 P(x^2) with P of degree 4 fitted here (relative least
/// squares reweighted toward the largest error, in float64; 0.07 ulp before float rounding);
/// above, 1 - 2 / (e^(2|x|) + 1), which loses at most a bit to cancellation there. |x| is
/// clamped at 10, past which tanh rounds to 1 (1 - tanh(10) < 1e-8).
IGNIS_HOST_DEVICE_ALWAYS_INLINE float fast_tanh(float x) {
  const float a = std::fabs(x);
  const float ac = a > 10.0f ? 10.0f : a;  // NaN passes through
  const float e = fast_exp_in_range(2.0f * ac);
  const float large = 1.0f - 2.0f / (e + 1.0f);
  const float s = ac * ac;
  float p = -0.006153821013867855f;
  p = p * s + 0.020985770970582962f;
  p = p * s - 0.053831424564123154f;
  p = p * s + 0.13332390785217285f;
  p = p * s - 0.3333331346511841f;
  const float small = ac + ac * s * p;
  return std::copysign(ac < 0.55f ? small : large, x);
}

/// The natural logarithm of a float, within 2 ulp of the correctly rounded result: -inf at
/// ±0, NaN below 0 and for NaN, inf at inf, subnormal inputs exact in their scaling.
/// Method: x = 2^k m with m in [sqrt(1/2), sqrt(2)) read from the bits (a subnormal is first
/// scaled by 2^23); log m = 2 atanh(z) with z = (m - 1) / (m + 1), |z| <= 0.1716, as
/// 2z + z^3 Q(z^2), Q of degree 2 fitted as fast_tanh's P (0.02 ulp before float rounding);
/// k ln2 added in two parts (Cody-Waite) so k ln2_hi is exact.
IGNIS_HOST_DEVICE_ALWAYS_INLINE float fast_log(float x) {
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr uint32_t kSqrtHalfBits = 0x3f3504f3u;  // the bits of sqrt(1/2)
  const bool subnormal = x < 1.17549435e-38f;      // also 0, negatives: replaced below
  const float xs = subnormal ? x * 8388608.0f : x;
  const uint32_t bits = detail::float_bits(xs);
  // k: the octave of xs counted from [sqrt(1/2), sqrt(2)) (an arithmetic shift of the
  // difference; unsigned arithmetic, as any bit pattern arrives here, negatives included).
  const int32_t k = int32_t(bits - kSqrtHalfBits) >> 23;
  const float m = detail::bits_float(bits - (uint32_t(k) << 23));
  const float e = float(k) - (subnormal ? 23.0f : 0.0f);
  const float f = m - 1.0f;  // exact: m is within a factor 2 of 1
  const float z = f / (m + 1.0f);
  const float s = z * z;
  float q = 0.2999679446220398f;
  q = q * s + 0.3997263014316559f;
  q = q * s + 0.666668176651001f;
  const float r = e * kLn2Hi + ((2.0f * z + z * s * q) + e * kLn2Lo);
  const float inf = detail::bits_float(0x7f800000u);
  const float nan = detail::bits_float(0x7fc00000u);
  const float special = x == 0.0f ? -inf : (x == inf ? inf : nan);  // x <= 0, inf or NaN
  return x > 0.0f && x < inf ? r : special;
}

/// e^x - 1 for float, keeping its relative accuracy near 0 where fast_exp(x) - 1 would lose
/// it to cancellation (within 2 ulp; -1 below -88, inf above ln(FLT_MAX), NaN stays NaN, the
/// sign of 0 kept).
/// Method: x = n ln2 + r as in fast_exp; expm1(r) = r + r^2 P(r) with P the Taylor series to
/// r^8 (|r| <= ln2 / 2: the next term is below 2^-28 relative); then
/// e^x - 1 = 2^n expm1(r) + (2^n - 1), where both terms and the sum round once for n <= 24.
/// Above, 2^n e^r - 1 (2^n - 1 is no longer exact, and the -1 hardly matters).
IGNIS_HOST_DEVICE_ALWAYS_INLINE float fast_expm1(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;
  // |x| <= 89: n stays in [-129, 129], built in two normal halves below. One comparison, as
  // in fast_exp; NaN passes through.
  const float xc = std::fabs(x) > 89.0f ? std::copysign(89.0f, x) : x;
  const float t = xc * kLog2e + kRound;
  const float n = t - kRound;
  const int32_t ni = int32_t(detail::float_bits(t) & 0x7fffffu) - 0x400000;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 40320.0f;
  p = p * r + 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  const float q = r + r * r * p;  // expm1(r)
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const float s1 = detail::bits_float(uint32_t(n1 + 127) << 23);
  const float s2 = detail::bits_float(uint32_t(n2 + 127) << 23);
  const float s = s1 * s2;  // 2^n; inf for n = 129, where only the large branch is taken
  const float small = q * s + (s - 1.0f);
  const float large = ((1.0f + q) * s1) * s2 - 1.0f;
  // expm1 has the sign of x: copysign restores -0, which the reduction turns into +0.
  return std::copysign(ni > 24 ? large : small, x);
}

/// log(1 + x) for float, keeping its relative accuracy near 0 (within 2 ulp): -inf at -1, NaN
/// below -1 and for NaN, inf at inf, the sign of 0 kept.
/// Method: u = 1 + x rounded, then log1p(x) = log(u) + (x - (u - 1)) / u: the second term is
/// the first-order correction for the rounding of u (exact where u - 1 is, which Sterbenz's
/// lemma gives for u in [1/2, 2]).
IGNIS_HOST_DEVICE_ALWAYS_INLINE float fast_log1p(float x) {
  const float u = 1.0f + x;
  const float l = fast_log(u);
  const float corrected = l + (x - (u - 1.0f)) / u;
  // At u = 0 or inf the correction is NaN; l alone is the answer there (and NaN below -1).
  const float r = std::fabs(l) < detail::bits_float(0x7f800000u) ? corrected : l;
  return std::copysign(r, x);  // log1p has the sign of x (NaN stays NaN either way)
}

/// erfc(u) for u >= 0 (or NaN) in float, within 8 ulp (relative) wherever the result is a
/// normal float, so the tail keeps its digits where 1 - erf(u) would have lost them all.
/// Method: erfc(u) = e^(-u^2) R(u), where R = erfcx is smooth and tends to 1/(u sqrt(pi)); R
/// is a rational P4(u)/Q5(u) fitted here (relative least squares, reweighted as in Loeb's
/// method, in float64) on [0, 10], and e^(-u^2) uses u^2 = hi + lo (the product's exact
/// rounding error by FMA): e^(-hi) (1 - lo). Past u = 10.19 the result is 0 (it underflows).
IGNIS_HOST_DEVICE_ALWAYS_INLINE float fast_erfc_nonnegative(float u) {
  // u^2 <= 10.19^2 < 104: fast_exp_in_range needs no clamp of its own (one comparison fewer
  // per element), and e^-103.8 R(10.19) already rounds to 0. Written as the processor's min
  // instruction computes it (NaN passes through); std::min, which takes references, keeps
  // GCC from vectorising the loop. The loops calling this are built with -fno-trapping-math
  // (src/CMakeLists.txt): under the default, GCC keeps float selects as branches.
  const float uc = 10.19f < u ? 10.19f : u;
  const float hi = uc * uc;
  const float lo = std::fma(uc, uc, -hi);
  const float e = fast_exp_in_range(-hi) * (1.0f - lo);
  float p = 0.03417619317770004f;
  p = p * uc + 0.23531386256217957f;
  p = p * uc + 0.7438750863075256f;
  p = p * uc + 1.249548077583313f;
  p = p * uc + 1.0f;
  float q = 0.060575101524591446f;
  q = q * uc + 0.41710659861564636f;
  q = q * uc + 1.3483808040618896f;
  q = q * uc + 2.427062511444092f;
  q = q * uc + 2.3779287338256836f;
  q = q * uc + 1.0f;
  return e * p / q;
}

/// The standard normal CDF, P(Z <= x), with small relative error in both tails: the lower
/// tail is erfc(-x / sqrt 2) / 2 directly (1 + erf(x / sqrt 2) would cancel to 0 in float
/// below x ~ -5.5), the upper one 1 minus the tail. Infinities give 0 and 1; NaN stays NaN.
IGNIS_HOST_DEVICE_ALWAYS_INLINE float normal_cdf(float x) {
  const float tail = 0.5f * fast_erfc_nonnegative(std::fabs(x) * 0.70710678118654752440f);
  const float upper = 1.0f - tail;
  return x < 0.0f ? tail : upper;
}

}  // namespace ignis::kernels
