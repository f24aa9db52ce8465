// Fast, branch-free float math for hot loops (softmax, GELU), host and device alike. std::exp does
// not vectorise without -ffast-math; these use only multiplies, adds, compares and integer bit
// operations, so a `#pragma omp simd` loop calling them becomes vector code.
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
