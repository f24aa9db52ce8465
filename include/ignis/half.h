// The two 16-bit floating-point storage types: Half (IEEE binary16) and BFloat16.
// They only store; arithmetic happens in float (see src/kernels/opmath.h). Conversions are
// written with bit operations so the same code runs on the host and on a CUDA device.
#pragma once

#include <cstdint>
#include <cstring>

#include "ignis/macros.h"

namespace ignis {

namespace detail {
IGNIS_HOST_DEVICE uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
IGNIS_HOST_DEVICE float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
}  // namespace detail

/// bfloat16: the top 16 bits of a float32. Conversion from float rounds to nearest even;
/// NaN stays NaN.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  IGNIS_HOST_DEVICE BFloat16(float f) : bits(from_float(f)) {}
  IGNIS_HOST_DEVICE operator float() const { return detail::bits_float(uint32_t(bits) << 16); }
  IGNIS_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return uint16_t(u >> 16);
  }
  IGNIS_HOST_DEVICE static BFloat16 from_bits(uint16_t b) {
    BFloat16 r;
    r.bits = b;
    return r;
  }
};

/// float16 (IEEE 754 binary16). Conversion from float rounds to nearest even, overflows to
/// infinity and keeps subnormals.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  IGNIS_HOST_DEVICE Half(float f) : bits(from_float(f)) {}
  IGNIS_HOST_DEVICE operator float() const { return to_float(bits); }
  IGNIS_HOST_DEVICE static Half from_bits(uint16_t b) {
    Half r;
    r.bits = b;
    return r;
  }
  IGNIS_HOST_DEVICE static float to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000u | (mant << 13));  // inf/nan
    if (exp != 0) return detail::bits_float(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0) return detail::bits_float(sign);  // signed zero
    // Subnormal half: value = mant * 2^-24, exact in float.
    float v = float(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  IGNIS_HOST_DEVICE static uint16_t from_float(float f) {
    const uint32_t u = detail::float_bits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
    if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (a < 0x38800000u) {
      // Result is subnormal (or zero): scale so the half ulp (2^-24) is one unit, round even.
      const float af = detail::bits_float(a);
      const float scaled = af * 16777216.0f;  // exact: power of two
      uint32_t m = uint32_t(scaled);
      const float rem = scaled - float(m);
      if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
      return uint16_t(sign | m);
    }
    // Normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits to even.
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return uint16_t(sign | (r >> 13));
  }
};

}  // namespace ignis
