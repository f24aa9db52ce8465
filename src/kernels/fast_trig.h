// Sine and cosine of a float over its whole range, branch-free so that the CPU loops calling
// them become vector code (std::sin is a scalar libm call per element: a [4096,4096] sin took
// 175 ms at one thread against PyTorch's 7). Host code only: CUDA kernels keep the device's
// sinf and cosf. tests/ops/test_fast_math.cpp checks both against libm in float64.
//
// Method. A finite float is x = m 2^s with m a 24-bit integer (subnormals included). Then
// x (2/pi) = m C_s + 4k for an integer k, where C_s = 2^s (2/pi) mod 4 depends on the exponent
// alone: the bits of 2/pi that would land on multiples of 4 are dropped. The table below holds
// C_s for every exponent as three doubles of 29 bits each (87 bits from the 2^1 place down), so
// each m C_s,i is exact in double and x (2/pi) mod 4 = q + r, q an integer and |r| <= 1/2, is
// found with an absolute error near 2^-54 however large x is (the classic Payne-Hanek
// reduction, with the window of 2/pi picked by a table lookup instead of shifts). sin and cos
// of a = r pi/2, |a| <= pi/4, rounded to float, are Taylor polynomials in float (to a^9 and
// a^10: below 2^-26 relative), and the quadrant q mod 4 picks and negates them.
// Below 2^26 no bits of 2/pi need dropping and C_s is 2^s C_0: x C_0 in double is exactly
// m C_s, so fast_sin_moderate and fast_cos_moderate skip the table lookups (two thirds of the
// time: the CPU builds each lookup from scalar loads) and give the same bits there.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace ignis::kernels {
namespace trig_detail {

/// The first 256 bits of 2/pi after the binary point, most significant first.
inline constexpr std::array<uint64_t, 4> kTwoOverPiBits = {
    0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull, 0xfe5163abdebbc561ull};

/// The n-bit integer read from the bits of 2/pi at positions first..first+n-1 (position 1 is
/// the 2^-1 place).
constexpr uint64_t two_over_pi_chunk(int first, int n) {
  uint64_t v = 0;
  for (int i = first; i < first + n; ++i) {
    const int word = (i - 1) / 64, bit = 63 - (i - 1) % 64;
    v = (v << 1) | ((kTwoOverPiBits[size_t(word)] >> bit) & 1u);
  }
  return v;
}

constexpr double times_power_of_two(double v, int e) {
  for (; e > 0; --e) v *= 2.0;
  for (; e < 0; ++e) v *= 0.5;
  return v;
}

/// C_s (the header comment) in three parts for each biased float exponent E, with s = E - 150
/// the exponent of the integer mantissa; E = 0 (subnormals) uses E = 1's, E = 255 (inf, NaN)
/// holds NaN so that those give NaN.
struct ReductionTable {
  std::array<double, 256> c0{}, c1{}, c2{};
};

constexpr ReductionTable make_reduction_table() {
  ReductionTable t;
  for (int e = 1; e < 255; ++e) {
    const int s = e - 150;
    // Bit i of 2/pi has place value 2^(s - i) in 2^s (2/pi); those with s - i >= 2 only add
    // multiples of 4.
    const int first = s - 1 > 1 ? s - 1 : 1;
    t.c0[size_t(e)] = times_power_of_two(double(two_over_pi_chunk(first, 29)), s - first - 28);
    t.c1[size_t(e)] = times_power_of_two(double(two_over_pi_chunk(first + 29, 29)), s - first - 57);
    t.c2[size_t(e)] = times_power_of_two(double(two_over_pi_chunk(first + 58, 29)), s - first - 86);
  }
  t.c0[0] = t.c0[1], t.c1[0] = t.c1[1], t.c2[0] = t.c2[1];
  t.c0[255] = t.c1[255] = t.c2[255] = std::bit_cast<double>(0x7ff8000000000000ull);
  return t;
}

inline constexpr ReductionTable kReduction = make_reduction_table();

/// sin and cos of |x| as parts: a in [-pi/4, pi/4] and the quadrant q (mod 4).
struct Reduced {
  float a;
  uint32_t q;
};

/// kTable false: only for |x| < 2^26 or not finite (needs_table(x) false).
template <bool kTable>
[[gnu::always_inline]] inline Reduced reduce_quadrant(float x) {
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  double m, c0, c1, c2;  // m C_s = |x| C_0 below 2^26
  if constexpr (kTable) {
    const uint32_t e = (bits >> 23) & 0xffu;
    const uint32_t mantissa = bits & 0x7fffffu;
    m = double(int32_t(e != 0 ? mantissa | 0x800000u : mantissa));
    c0 = kReduction.c0[e], c1 = kReduction.c1[e], c2 = kReduction.c2[e];
  } else {
    m = double(std::bit_cast<float>(bits & 0x7fffffffu));
    c0 = kReduction.c0[150], c1 = kReduction.c1[150], c2 = kReduction.c2[150];
  }
  const double y0 = m * c0;  // exact, below 2^26
  const double t0 = y0 + kRound;
  const double f0 = y0 - (t0 - kRound);  // exact, in [-1/2, 1/2]
  const double f = f0 + (m * c1 + m * c2);
  const double t1 = f + kRound;
  const double r = f - (t1 - kRound);
  // The low bits of t0 and t1 hold the two rounded integers (mod 2^51, two's complement).
  const uint64_t q = std::bit_cast<uint64_t>(t0) + std::bit_cast<uint64_t>(t1);
  return {float(r * 1.57079632679489661923), uint32_t(q)};
}

[[gnu::always_inline]] inline float sin_poly(float a) {
  const float s = a * a;
  float p = -1.0f / 362880.0f;
  p = p * s + 1.0f / 5040.0f;
  p = p * s - 1.0f / 120.0f;
  p = p * s + 1.0f / 6.0f;
  return a - a * s * p;
}

[[gnu::always_inline]] inline float cos_poly(float a) {
  const float s = a * a;
  float p = -1.0f / 3628800.0f;
  p = p * s + 1.0f / 40320.0f;
  p = p * s - 1.0f / 720.0f;
  p = p * s + 1.0f / 24.0f;
  p = p * s - 0.5f;
  return 1.0f + s * p;
}

template <bool kTable>
[[gnu::always_inline]] inline float sin_of(float x) {
  const Reduced r = reduce_quadrant<kTable>(x);
  // sin(|x|) by quadrant: s, c, -s, -c; sin is odd, so x's sign is applied last.
  const float sc = (r.q & 1u) != 0 ? cos_poly(r.a) : sin_poly(r.a);
  const uint32_t negate = ((r.q >> 1) & 1u) ^ (std::bit_cast<uint32_t>(x) >> 31);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(sc) ^ (negate << 31));
}

template <bool kTable>
[[gnu::always_inline]] inline float cos_of(float x) {
  const Reduced r = reduce_quadrant<kTable>(x);
  // cos(|x|) by quadrant: c, -s, -c, s.
  const float sc = (r.q & 1u) != 0 ? sin_poly(r.a) : cos_poly(r.a);
  const uint32_t negate = ((r.q + 1u) >> 1) & 1u;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(sc) ^ (negate << 31));
}

}  // namespace trig_detail

/// sin(x) for float, within 2 ulp of the correctly rounded result for every float (NaN for
/// NaN and infinities, the sign of 0 kept).
[[gnu::always_inline]] inline float fast_sin(float x) { return trig_detail::sin_of<true>(x); }

/// cos(x) for float, within 2 ulp of the correctly rounded result for every float (NaN for
/// NaN and infinities).
[[gnu::always_inline]] inline float fast_cos(float x) { return trig_detail::cos_of<true>(x); }

/// Whether x is a finite float of magnitude 2^26 or more, the only ones for which the
/// _moderate functions below differ from fast_sin and fast_cos.
[[gnu::always_inline]] inline bool trig_needs_table(float x) {
  const uint32_t e = (std::bit_cast<uint32_t>(x) >> 23) & 0xffu;  // 153 is 2^26's, 255 inf's
  return e - 153u < 102u;
}

/// fast_sin and fast_cos without the table, for loops that checked trig_needs_table first.
[[gnu::always_inline]] inline float fast_sin_moderate(float x) {
  return trig_detail::sin_of<false>(x);
}
[[gnu::always_inline]] inline float fast_cos_moderate(float x) {
  return trig_detail::cos_of<false>(x);
}

}  // namespace ignis::kernels
