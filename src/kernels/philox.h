// The Philox 4x32-10 counter-based generator and every random distribution built on it, as
// host+device functions: the CPU kernels (src/cpu/random.cpp) and a future CUDA kernel call the
// same code, so both produce bit-identical values. Nothing here keeps state; a value is a pure
// function of (seed, offset, element index) — Note [Philox streams] in src/ops/random.cpp.
//
// Layout of one draw:
//   key     = {low 32 bits of seed, high 32 bits of seed}
//   counter = {low 32 bits of block, high 32 bits of block, 0, 0}   (a 128-bit counter whose
//             low 64 bits are the block index and whose high 64 bits are zero)
//   block   = offset + i / kPerBlock, and value i takes its words from lane i % kPerBlock.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

// Full unrolling of the fixed-count loops below: it lets the CPU compiler keep the words in
// registers and vectorise across blocks, and is what nvcc does with them anyway.
#if defined(__CUDACC__) || defined(__clang__)
#define IGNIS_PHILOX_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define IGNIS_PHILOX_UNROLL _Pragma("GCC unroll 16")
#else
#define IGNIS_PHILOX_UNROLL
#endif

// Every function here is forced inline on the host: the CPU loop calls them for a batch of
// blocks under `omp simd`, which vectorises only what is inlined (GCC otherwise keeps the
// larger ones, like Normal::values, as out-of-line calls).
#if defined(__CUDACC__)
#define IGNIS_PHILOX_FN IGNIS_HOST_DEVICE
#elif defined(__GNUC__)
#define IGNIS_PHILOX_FN inline __attribute__((always_inline))
#else
#define IGNIS_PHILOX_FN inline
#endif

namespace ignis::kernels::philox {

/// Four 32-bit words: a counter going in, random bits coming out.
struct Words {
  uint32_t w[4];
};

// Constants of Philox 4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

/// 32x32 -> 64-bit product split in halves. A plain 64-bit multiply: compilers turn it into
/// one mul (x86-64), umull (ARM) or mul.wide.u32 (PTX), so no intrinsic is needed.
IGNIS_PHILOX_FN void mul_hi_lo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

/// Philox 4x32 with 10 rounds (Random123's philox4x32_R(10, ctr, key)). Each round multiplies
/// words 0 and 2 by the Philox constants and mixes the high halves with words 1 and 3 and the
/// key; the key is bumped by the Weyl constants between rounds. Kept in four scalars (not an
/// array) so the words stay in registers and the CPU loop vectorises across blocks.
IGNIS_PHILOX_FN Words philox4x32_10(Words ctr, uint32_t k0, uint32_t k1) {
  uint32_t c0 = ctr.w[0], c1 = ctr.w[1], c2 = ctr.w[2], c3 = ctr.w[3];
  IGNIS_PHILOX_UNROLL
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mul_hi_lo(kMul0, c0, hi0, lo0);
    mul_hi_lo(kMul1, c2, hi1, lo1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return Words{{c0, c1, c2, c3}};
}

/// The random words of block `block` for `seed`.
IGNIS_PHILOX_FN Words block_words(uint64_t seed, uint64_t block) {
  return philox4x32_10(Words{{uint32_t(block), uint32_t(block >> 32), 0u, 0u}}, uint32_t(seed),
                       uint32_t(seed >> 32));
}

// ---- bits to numbers ------------------------------------------------------------------------

/// Uniform on the grid {0, 2^-bits, ..., 1 - 2^-bits} from the top `bits` (<= 24) bits of w.
/// Exact in float, and in every float type with at least `bits` significand bits, so storing
/// it never rounds up to 1.
IGNIS_PHILOX_FN float uniform_bits(uint32_t w, int bits) {
  return float(w >> (32 - bits)) * (1.0f / float(1u << bits));
}
/// A 64-bit draw from two words (first word = low half).
IGNIS_PHILOX_FN uint64_t join64(uint32_t lo, uint32_t hi) { return uint64_t(hi) << 32 | lo; }
/// Uniform in [0, 1) with 53 random bits (the top 53 of the 64-bit draw); exact in double.
/// Equal to double(join64(lo, hi) >> 11) * 2^-53, assembled from two non-negative int32
/// parts (exact) because packed uint64 -> double conversion is missing before AVX-512.
IGNIS_PHILOX_FN double uniform53(uint32_t lo, uint32_t hi) {
  const uint32_t top = hi >> 1;                          // bits 52..22 of the 53
  const uint32_t rest = ((hi & 1u) << 21) | (lo >> 11);  // bits 21..0
  return (double(int32_t(top)) * 4194304.0 + double(int32_t(rest))) * 0x1.0p-53;
}
/// High 64 bits of the 128-bit product x * r, written with 32-bit pieces so it needs no
/// __int128 (absent on the device).
IGNIS_PHILOX_FN uint64_t mul_hi64(uint64_t x, uint64_t r) {
  const uint64_t x0 = uint32_t(x), x1 = x >> 32, r0 = uint32_t(r), r1 = r >> 32;
  const uint64_t p00 = x0 * r0, p01 = x0 * r1, p10 = x1 * r0, p11 = x1 * r1;
  const uint64_t mid = (p00 >> 32) + uint32_t(p01) + uint32_t(p10);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

// ---- distributions --------------------------------------------------------------------------
// Each one says how many values one block yields (kPerBlock, so a call of n values reserves
// ceil(n / kPerBlock) blocks) and computes the values of a block with `values(words, out)`.
// Results are in double; the kernel rounds them to the output dtype.

/// Uniform in [from, to) from `bits` random bits per value: 24 for float32, the significand
/// width for bfloat16 (8) and float16 (11), so u itself is exact in the output type. One word
/// per value, four values per block. float64 uses Uniform53 instead.
struct UniformFloat {
  static constexpr int kPerBlock = 4;
  double from, to;
  int bits;
  IGNIS_PHILOX_FN void values(Words b, double* out) const {
    IGNIS_PHILOX_UNROLL
    for (int l = 0; l < 4; ++l) out[l] = from + (to - from) * double(uniform_bits(b.w[l], bits));
  }
};

/// Uniform in [from, to) with 53 random bits per value: two words each, two values per block.
struct Uniform53 {
  static constexpr int kPerBlock = 2;
  double from, to;
  IGNIS_PHILOX_FN void values(Words b, double* out) const {
    out[0] = from + (to - from) * uniform53(b.w[0], b.w[1]);
    out[1] = from + (to - from) * uniform53(b.w[2], b.w[3]);
  }
};

// ---- Box–Muller math --------------------------------------------------------------------------
// log and sin/cos written out with +, *, / and bit operations instead of calling libm: the
// result then does not depend on the host's libm or on CUDA's, the code is branch-free so the
// CPU loop vectorises it, and the arguments are known to be tame (x in (0, 1], angle 2 pi u).
// Both are within ~2 ulp of the correctly rounded value in double (checked against std::log,
// std::sin and std::cos in tests/core/test_random.cpp), far below the rounding to float.

IGNIS_PHILOX_FN uint64_t double_bits(double x) {
#if defined(__CUDA_ARCH__)
  return uint64_t(__double_as_longlong(x));
#else
  uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
#endif
}
IGNIS_PHILOX_FN double bits_double(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double((long long)u);
#else
  double x;
  std::memcpy(&x, &u, 8);
  return x;
#endif
}

/// Bitwise select: b where pick (0 or 1) is 1, else a (exact, and no branch or bool for the
/// vectoriser).
IGNIS_PHILOX_FN double select_bits(uint32_t pick, double a, double b) {
  const uint64_t mask = uint64_t(0) - uint64_t(pick);
  return bits_double((double_bits(a) & ~mask) | (double_bits(b) & mask));
}
/// -x when neg (0 or 1) is 1, else x (flips the sign bit).
IGNIS_PHILOX_FN double negate_if(uint32_t neg, double x) {
  return bits_double(double_bits(x) ^ (uint64_t(neg) << 63));
}

/// Natural log of a positive normal double x: x = 2^e * m with m in [0.707, 1.415),
/// log m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| < 0.1716, summed as an odd series.
/// Only integer operations pick m and e (packed int64 <-> double conversions are missing
/// before AVX-512, and a branch would stop the vectoriser).
IGNIS_PHILOX_FN double log_positive(double x) {
  const uint64_t bits = double_bits(x);
  // m >= sqrt(2) (top 20 significand bits past 0x6a09e): halve m, add one to e.
  const uint32_t high = (uint32_t(bits >> 32) & 0xfffffu) > 0x6a09eu ? 1u : 0u;
  const double m =
      bits_double((bits & 0x000fffffffffffffull) | (uint64_t(0x3ffu - high) << 52));
  const int32_t e = int32_t(uint32_t(bits >> 52) & 0x7ffu) - 1023 + int32_t(high);
  const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  // 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ... ); s^24 / 25 < 2e-39, so 12 terms suffice.
  double p = 1.0 / 23;
  p = p * s2 + 1.0 / 21;
  p = p * s2 + 1.0 / 19;
  p = p * s2 + 1.0 / 17;
  p = p * s2 + 1.0 / 15;
  p = p * s2 + 1.0 / 13;
  p = p * s2 + 1.0 / 11;
  p = p * s2 + 1.0 / 9;
  p = p * s2 + 1.0 / 7;
  p = p * s2 + 1.0 / 5;
  p = p * s2 + 1.0 / 3;
  const double log_m = 2.0 * s + 2.0 * s * (s2 * p);
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  return double(e) * ln2_hi + (double(e) * ln2_lo + log_m);
}

/// sqrt(x) for x >= 0 (normal or zero) by Newton's method on 1/sqrt(x) from the classic
/// bit-level first guess (4 steps: 3.4e-2 -> 1.7e-3 -> 4.5e-6 -> 3e-11 -> 1e-21), then one
/// Heron correction of x / sqrt(x). Within 1 ulp; std::sqrt would be exact but its errno
/// path is a branch the vectoriser refuses.
IGNIS_PHILOX_FN double sqrt_nonnegative(double x) {
  double y = bits_double(0x5fe6eb50c7b537a9ull - (double_bits(x) >> 1));
  const double half_x = 0.5 * x;
  IGNIS_PHILOX_UNROLL
  for (int i = 0; i < 4; ++i) y = y * (1.5 - half_x * y * y);
  const double r = x * y;
  return r + 0.5 * y * (x - r * r);
}

/// sin(2 pi u) and cos(2 pi u) for u in [0, 1): 4u = q + r with q the nearest integer and
/// r in [-1/2, 1/2] (exact), so the angle a = r pi / 2 lies in [-pi/4, pi/4] where short
/// Taylor series converge; the quadrant q permutes and negates the results.
IGNIS_PHILOX_FN void sincos_2pi(double u, double& sin_out, double& cos_out) {
  const double t = 4.0 * u;
  const int32_t qi = int32_t(t + 0.5);
  const double a = (t - double(qi)) * 1.5707963267948966;
  const double a2 = a * a;
  // sin a = a (1 - a^2/3! + ... - a^16/17!), cos a = 1 - a^2/2! + ... + a^16/16!
  double ps = -1.0 / 355687428096000.0;           // -1/17!
  ps = ps * a2 + 1.0 / 1307674368000.0;           // 1/15!
  ps = ps * a2 - 1.0 / 6227020800.0;              // -1/13!
  ps = ps * a2 + 1.0 / 39916800.0;                // 1/11!
  ps = ps * a2 - 1.0 / 362880.0;                  // -1/9!
  ps = ps * a2 + 1.0 / 5040.0;                    // 1/7!
  ps = ps * a2 - 1.0 / 120.0;                     // -1/5!
  ps = ps * a2 + 1.0 / 6.0;                       // 1/3!
  const double sin_a = a - a * a2 * ps;
  double pc = 1.0 / 20922789888000.0;             // 1/16!
  pc = pc * a2 - 1.0 / 87178291200.0;             // -1/14!
  pc = pc * a2 + 1.0 / 479001600.0;               // 1/12!
  pc = pc * a2 - 1.0 / 3628800.0;                 // -1/10!
  pc = pc * a2 + 1.0 / 40320.0;                   // 1/8!
  pc = pc * a2 - 1.0 / 720.0;                     // -1/6!
  pc = pc * a2 + 1.0 / 24.0;                      // 1/4!
  pc = pc * a2 - 1.0 / 2.0;                       // -1/2!
  const double cos_a = 1.0 + a2 * pc;
  // sin(q pi/2 + a) and cos(q pi/2 + a) for q = 0..3: (s, c), (c, -s), (-s, -c), (-c, s).
  const uint32_t q = uint32_t(qi), odd = q & 1u;
  sin_out = negate_if((q >> 1) & 1u, select_bits(odd, sin_a, cos_a));
  cos_out = negate_if(((q + 1u) >> 1) & 1u, select_bits(odd, cos_a, sin_a));
}

/// Normal(mean, std) by Box–Muller in double: u1 from words 0-1 and u2 from words 2-3 (53 bits
/// each) give r = sqrt(-2 log(1 - u1)) and theta = 2 pi u2; lane 0 is r cos(theta), lane 1
/// r sin(theta). 1 - u1 lies in [2^-53, 1], so the log is finite (|z| <= 8.58).
struct Normal {
  static constexpr int kPerBlock = 2;
  double mean, std;
  IGNIS_PHILOX_FN void values(Words b, double* out) const {
    const double u1 = uniform53(b.w[0], b.w[1]);
    const double u2 = uniform53(b.w[2], b.w[3]);
    const double r = sqrt_nonnegative(-2.0 * log_positive(1.0 - u1));
    double sin_t, cos_t;
    sincos_2pi(u2, sin_t, cos_t);
    out[0] = mean + std * (r * cos_t);
    out[1] = mean + std * (r * sin_t);
  }
};

/// Integers uniform in [low, low + range), range >= 1, from a 64-bit draw x (two words, two
/// values per block) reduced by Lemire's multiply-shift: value = low + floor(x * range / 2^64).
/// No rejection, so each value is a pure function of its block; every outcome has probability
/// floor(2^64/range)/2^64 or ceil(...)/2^64, a relative bias below range / 2^64 (< 2^-32 for
/// any range under 2^32), far below anything a test or a model can see.
struct RandInt {
  static constexpr int kPerBlock = 2;
  int64_t low;
  uint64_t range;
  IGNIS_PHILOX_FN int64_t value(uint32_t lo, uint32_t hi) const {
    return int64_t(uint64_t(low) + mul_hi64(join64(lo, hi), range));
  }
  IGNIS_PHILOX_FN void values(Words b, int64_t* out) const {
    out[0] = value(b.w[0], b.w[1]);
    out[1] = value(b.w[2], b.w[3]);
  }
};

/// The uniforms a Bernoulli draw compares with p (value = u < p): 53 bits, two per block, so
/// even tiny p (1e-10 in float64) keep their probability.
struct BernoulliUniform {
  static constexpr int kPerBlock = 2;
  IGNIS_PHILOX_FN void values(Words b, double* out) const {
    out[0] = uniform53(b.w[0], b.w[1]);
    out[1] = uniform53(b.w[2], b.w[3]);
  }
};

/// Sort keys of randperm: the raw 64-bit draws (two per block). The permutation is the
/// argsort of the keys, ties broken by index.
struct PermKey {
  static constexpr int kPerBlock = 2;
  IGNIS_PHILOX_FN void values(Words b, uint64_t* out) const {
    out[0] = join64(b.w[0], b.w[1]);
    out[1] = join64(b.w[2], b.w[3]);
  }
};

/// Value i of distribution d for (seed, offset): what one GPU thread computes for element i.
template <class Dist, class V>
IGNIS_PHILOX_FN V value_at(const Dist& d, uint64_t seed, uint64_t offset, uint64_t i) {
  V vals[Dist::kPerBlock];
  d.values(block_words(seed, offset + i / Dist::kPerBlock), vals);
  return vals[i % Dist::kPerBlock];
}

/// Blocks a draw of n values reserves: ceil(n / per_block).
IGNIS_PHILOX_FN uint64_t blocks_for(uint64_t n, int per_block) {
  return (n + uint64_t(per_block) - 1) / uint64_t(per_block);
}

}  // namespace ignis::kernels::philox
