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

#include "kernels/host_device.h"

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
IGNIS_HOST_DEVICE void mul_hi_lo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

/// One Philox round: two multiplies, the high halves mixed with the other words and the key.
IGNIS_HOST_DEVICE Words philox_round(const Words& c, uint32_t k0, uint32_t k1) {
  uint32_t hi0, lo0, hi1, lo1;
  mul_hi_lo(kMul0, c.w[0], hi0, lo0);
  mul_hi_lo(kMul1, c.w[2], hi1, lo1);
  return Words{{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
}

/// Philox 4x32 with 10 rounds (Random123's philox4x32_R(10, ctr, key)); the key is bumped by
/// the Weyl constants between rounds.
IGNIS_HOST_DEVICE Words philox4x32_10(Words ctr, uint32_t k0, uint32_t k1) {
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    ctr = philox_round(ctr, k0, k1);
  }
  return ctr;
}

/// The random words of block `block` for `seed`.
IGNIS_HOST_DEVICE Words block_words(uint64_t seed, uint64_t block) {
  return philox4x32_10(Words{{uint32_t(block), uint32_t(block >> 32), 0u, 0u}}, uint32_t(seed),
                       uint32_t(seed >> 32));
}

// ---- bits to numbers ------------------------------------------------------------------------

/// Uniform on the grid {0, 2^-bits, ..., 1 - 2^-bits} from the top `bits` (<= 24) bits of w.
/// Exact in float, and in every float type with at least `bits` significand bits, so storing
/// it never rounds up to 1.
IGNIS_HOST_DEVICE float uniform_bits(uint32_t w, int bits) {
  return float(w >> (32 - bits)) * (1.0f / float(1u << bits));
}
/// A 64-bit draw from two words (first word = low half).
IGNIS_HOST_DEVICE uint64_t join64(uint32_t lo, uint32_t hi) { return uint64_t(hi) << 32 | lo; }
/// Uniform in [0, 1) with 53 random bits (the top 53 of the 64-bit draw); exact in double.
IGNIS_HOST_DEVICE double uniform53(uint32_t lo, uint32_t hi) {
  return double(join64(lo, hi) >> 11) * 0x1.0p-53;
}
/// High 64 bits of the 128-bit product x * r, written with 32-bit pieces so it needs no
/// __int128 (absent on the device).
IGNIS_HOST_DEVICE uint64_t mul_hi64(uint64_t x, uint64_t r) {
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
  IGNIS_HOST_DEVICE void values(const Words& b, double* out) const {
    for (int l = 0; l < 4; ++l) out[l] = from + (to - from) * double(uniform_bits(b.w[l], bits));
  }
};

/// Uniform in [from, to) with 53 random bits per value: two words each, two values per block.
struct Uniform53 {
  static constexpr int kPerBlock = 2;
  double from, to;
  IGNIS_HOST_DEVICE void values(const Words& b, double* out) const {
    out[0] = from + (to - from) * uniform53(b.w[0], b.w[1]);
    out[1] = from + (to - from) * uniform53(b.w[2], b.w[3]);
  }
};

/// Normal(mean, std) by Box–Muller in double: u1 from words 0-1 and u2 from words 2-3 (53 bits
/// each) give r = sqrt(-2 log(1 - u1)) and theta = 2 pi u2; lane 0 is r cos(theta), lane 1
/// r sin(theta). 1 - u1 lies in (0, 1], so the log is finite (|z| <= 8.58). Double keeps the
/// libm differences between host and device far below the rounding to float.
struct Normal {
  static constexpr int kPerBlock = 2;
  double mean, std;
  IGNIS_HOST_DEVICE void values(const Words& b, double* out) const {
    const double u1 = uniform53(b.w[0], b.w[1]);
    const double u2 = uniform53(b.w[2], b.w[3]);
    const double r = std::sqrt(-2.0 * std::log(1.0 - u1));
    const double theta = 6.283185307179586476925286766559 * u2;
    out[0] = mean + std * (r * std::cos(theta));
    out[1] = mean + std * (r * std::sin(theta));
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
  IGNIS_HOST_DEVICE int64_t value(uint32_t lo, uint32_t hi) const {
    return int64_t(uint64_t(low) + mul_hi64(join64(lo, hi), range));
  }
  IGNIS_HOST_DEVICE void values(const Words& b, int64_t* out) const {
    out[0] = value(b.w[0], b.w[1]);
    out[1] = value(b.w[2], b.w[3]);
  }
};

/// The uniforms a Bernoulli draw compares with p (value = u < p): 53 bits, two per block, so
/// even tiny p (1e-10 in float64) keep their probability.
struct BernoulliUniform {
  static constexpr int kPerBlock = 2;
  IGNIS_HOST_DEVICE void values(const Words& b, double* out) const {
    out[0] = uniform53(b.w[0], b.w[1]);
    out[1] = uniform53(b.w[2], b.w[3]);
  }
};

/// Sort keys of randperm: the raw 64-bit draws (two per block). The permutation is the
/// argsort of the keys, ties broken by index.
struct PermKey {
  static constexpr int kPerBlock = 2;
  IGNIS_HOST_DEVICE void values(const Words& b, uint64_t* out) const {
    out[0] = join64(b.w[0], b.w[1]);
    out[1] = join64(b.w[2], b.w[3]);
  }
};

/// Value i of distribution d for (seed, offset): what one GPU thread computes for element i.
template <class Dist, class V>
IGNIS_HOST_DEVICE V value_at(const Dist& d, uint64_t seed, uint64_t offset, uint64_t i) {
  V vals[Dist::kPerBlock];
  d.values(block_words(seed, offset + i / Dist::kPerBlock), vals);
  return vals[i % Dist::kPerBlock];
}

/// Blocks a draw of n values reserves: ceil(n / per_block).
IGNIS_HOST_DEVICE uint64_t blocks_for(uint64_t n, int per_block) {
  return (n + uint64_t(per_block) - 1) / uint64_t(per_block);
}

}  // namespace ignis::kernels::philox
