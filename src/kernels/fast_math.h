// Fast, branch-free float math for hot loops (softmax), host and device alike. std::exp does
// not vectorise without -ffast-math; these use only multiplies, adds, compares and integer bit
// operations, so a `#pragma omp simd` loop calling them becomes vector code.
#pragma once

#include <cmath>
#include <cstdint>

#include "ignis/half.h"
#include "kernels/host_device.h"

namespace ignis::kernels {

/// e^x for float within 2 ulp of the correctly rounded result over the whole range (1 ulp
/// measured, with and without FMA contraction)
/// (tests/ops/test_reduce.cpp measures it): inf above ln(FLT_MAX), subnormals rounded once,
/// 0 below ln(2^-150), NaN stays NaN.
/// Method: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite split of ln2), e^r by a degree-7
/// polynomial, then 2^n built in the exponent bits in two halves so 2^-150..2^150 never leaves
/// the normal range before the final rounding.
/// Overflow needs no test: 2^75 * 2^75 * p is already inf in float.
IGNIS_HOST_DEVICE float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;       // 9 significant bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;    // ln2 - kLn2Hi
  constexpr float kRound = 12582912.0f;        // 1.5 * 2^23: adding it rounds to an integer
  // Clamp to [-104, 104] so n stays in [-150, 150]; the clamped ends still overflow to inf or
  // round to 0 as they should. One comparison only: two in a row let the compiler split the
  // loop body into branches it then cannot vectorise (it may not speculate a float compare).
  // A comparison with NaN is false, so NaN passes through.
  const float xc = std::fabs(x) > 104.0f ? std::copysign(104.0f, x) : x;
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

}  // namespace ignis::kernels
