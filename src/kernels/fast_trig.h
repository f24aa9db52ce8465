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
// m C_s, so the reduction can skip the table lookups (two thirds of the time: the CPU builds
// each lookup from scalar loads) and give the same bits there.
// Below kTrigSmallLimit the reduction is all float instead (Cody-Waite): q = round(|x| 2/pi)
// and |x| - q pi/2 with pi/2 in four floats, the first three of 8 and 12 significant bits so
// that each q P_i (q < 2^12) and the first two differences are exact. It stays within 2 ulp
// there (measured over every float below the limit, with and without FMA contraction), and
// runs at the float vector width.
// Each float takes one of those forms by its magnitude (trig_tier), so results do not depend
// on which loop computes them: the CPU loops check a block of values for the largest tier
// and run fast_sin_upto<tier>, which computes only the reductions up to that tier.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
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
    v = (v << 1) | ((kTwoOverPiBits[std::size_t(word)] >> bit) & 1u);
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
    t.c0[std::size_t(e)] = times_power_of_two(double(two_over_pi_chunk(first, 29)), s - first - 28);
    t.c1[std::size_t(e)] =
        times_power_of_two(double(two_over_pi_chunk(first + 29, 29)), s - first - 57);
    t.c2[std::size_t(e)] =
        times_power_of_two(double(two_over_pi_chunk(first + 58, 29)), s - first - 86);
  }
  t.c0[0] = t.c0[1], t.c1[0] = t.c1[1], t.c2[0] = t.c2[1];
  t.c0[255] = t.c1[255] = t.c2[255] = std::bit_cast<double>(0x7ff8000000000000ull);
  return t;
}

inline constexpr ReductionTable kReduction = make_reduction_table();

/// sin and cos of |x| as parts: a in [-pi/4, pi/4] (slightly beyond for the float
/// reduction, whose rounded quotient may be off by one at the quadrant boundaries) and the
/// quadrant q (mod 4).
struct Reduced {
  float a;
  uint32_t q;
};

/// kTable false: only for |x| < 2^26 or not finite (trig_tier(x) < 2).
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

/// The float reduction, for |x| < kTrigSmallLimit (the header comment).
[[gnu::always_inline]] inline Reduced reduce_small(float x) {
  constexpr float kTwoOverPi = 0.636619772367581343f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  // pi/2 = P1 + P2 + P3 + P4 to 60 bits; P1 to P3 have at most 12 significant bits.
  constexpr float kP1 = 0x1.92p+0f, kP2 = 0x1.fb4p-12f, kP3 = 0x1.444p-24f;
  constexpr float kP4 = 0x1.68c234p-39f;
  const float ax = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
  const float t = ax * kTwoOverPi + kRound;
  const float q = t - kRound;
  float r = ax - q * kP1;  // exact
  r = r - q * kP2;         // exact
  r = r - q * kP3;
  r = r - q * kP4;
  return {r, std::bit_cast<uint32_t>(t)};  // t's low bits hold q
}

/// Arguments of magnitude below this take reduce_small: their quotient q stays below 2^12.
inline constexpr float kTrigSmallLimit = 6432.0f;

/// The reduction fast_sin and fast_cos take for x, computing only those up to kTier.
template <int kTier>
[[gnu::always_inline]] inline Reduced reduce(float x) {
  const Reduced small = reduce_small(x);
  if constexpr (kTier == 0) {
    return small;
  } else {
    const Reduced large = reduce_quadrant<kTier == 2>(x);
    const bool is_small =
        std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu) < kTrigSmallLimit;
    return {is_small ? small.a : large.a, is_small ? small.q : large.q};
  }
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

template <int kTier>
[[gnu::always_inline]] inline float sin_of(float x) {
  const Reduced r = reduce<kTier>(x);
  // sin(|x|) by quadrant: s, c, -s, -c; sin is odd, so x's sign is applied last.
  const float sc = (r.q & 1u) != 0 ? cos_poly(r.a) : sin_poly(r.a);
  const uint32_t negate = ((r.q >> 1) & 1u) ^ (std::bit_cast<uint32_t>(x) >> 31);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(sc) ^ (negate << 31));
}

template <int kTier>
[[gnu::always_inline]] inline float cos_of(float x) {
  const Reduced r = reduce<kTier>(x);
  // cos(|x|) by quadrant: c, -s, -c, s.
  const float sc = (r.q & 1u) != 0 ? sin_poly(r.a) : cos_poly(r.a);
  const uint32_t negate = ((r.q + 1u) >> 1) & 1u;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(sc) ^ (negate << 31));
}

}  // namespace trig_detail

/// sin(x) for float, within 2 ulp of the correctly rounded result for every float (NaN for
/// NaN and infinities, the sign of 0 kept).
[[gnu::always_inline]] inline float fast_sin(float x) { return trig_detail::sin_of<2>(x); }

/// cos(x) for float, within 2 ulp of the correctly rounded result for every float (NaN for
/// NaN and infinities).
[[gnu::always_inline]] inline float fast_cos(float x) { return trig_detail::cos_of<2>(x); }

/// The reduction fast_sin and fast_cos take for x: 0 below kTrigSmallLimit in magnitude (all
/// float), 1 for other floats below 2^26 and for infinities and NaN (float64, no table), 2 for
/// finite floats of 2^26 or more (the table).
[[gnu::always_inline]] inline int trig_tier(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t e = (bits >> 23) & 0xffu;  // 153 is 2^26's, 255 inf's and NaN's
  const bool small = std::bit_cast<float>(bits & 0x7fffffffu) < trig_detail::kTrigSmallLimit;
  return int(!small) + int(e - 153u < 102u);
}

/// fast_sin and fast_cos with only the reductions up to kTier: the same bits for every x with
/// trig_tier(x) <= kTier (NaN for NaN, its payload aside), for loops that checked their
/// values' tiers first.
template <int kTier>
[[gnu::always_inline]] inline float fast_sin_upto(float x) {
  return trig_detail::sin_of<kTier>(x);
}
template <int kTier>
[[gnu::always_inline]] inline float fast_cos_upto(float x) {
  return trig_detail::cos_of<kTier>(x);
}

}  // namespace ignis::kernels
