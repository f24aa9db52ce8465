// Runs of 16-bit floats (BFloat16, Half) widened to float and float narrowed back, eight
// values per AVX2 step: bf16 by a 16-bit shift each way (narrowing rounds to nearest even and
// quiets NaNs, as BFloat16::from_float does), float16 by F16C's conversions. Kernels that
// compute on 16-bit tensors in float use them to stage pieces of a tensor through small float
// buffers, so their inner loops stay the float32 loops. The library is built for
// IGNIS_CPU_ARCH (x86-64-v3 by default: AVX2, FMA and F16C), so the vector steps are compiled
// in and inlined into those loops; a build for an older ISA converts one value at a time.
#pragma once

#include <cstdint>

#include "ignis/half.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ignis::cpu {

namespace vec_convert_detail {

// Each converts the leading multiple of 8 of n values and returns how many that was.
#if defined(__AVX2__)
[[gnu::always_inline]] inline int64_t widen8(const BFloat16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    _mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
  return i;
}

[[gnu::always_inline]] inline int64_t narrow8(const float* s, BFloat16* d, int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), half_ulp = _mm256_set1_epi32(0x7fff);
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(s + i));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);  // ties to even
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half_ulp, odd)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, magnitude), inf);
    const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    const __m256i r = _mm256_blendv_epi8(rounded, quieted, nan);
    // Every lane is below 2^16, so the unsigned-saturating pack keeps it; the permute puts
    // the two 128-bit halves' packed quarters next to each other.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(packed));
  }
  return i;
}
#else
inline int64_t widen8(const BFloat16*, float*, int64_t) { return 0; }
inline int64_t narrow8(const float*, BFloat16*, int64_t) { return 0; }
#endif

#if defined(__AVX2__) && defined(__F16C__)
[[gnu::always_inline]] inline int64_t widen8(const Half* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  return i;
}

[[gnu::always_inline]] inline int64_t narrow8(const float* s, Half* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}
#else
inline int64_t widen8(const Half*, float*, int64_t) { return 0; }
inline int64_t narrow8(const float*, Half*, int64_t) { return 0; }
#endif

}  // namespace vec_convert_detail

/// d[i] = float(s[i]) for i < n; T is BFloat16 or Half.
template <class T>
[[gnu::always_inline]] inline void widen(const T* s, float* d, int64_t n) {
  for (int64_t i = vec_convert_detail::widen8(s, d, n); i < n; ++i) d[i] = float(s[i]);
}

/// d[i] = T(s[i]) (round to nearest even) for i < n; T is BFloat16 or Half.
template <class T>
[[gnu::always_inline]] inline void narrow(const float* s, T* d, int64_t n) {
  for (int64_t i = vec_convert_detail::narrow8(s, d, n); i < n; ++i) d[i] = T(s[i]);
}

}  // namespace ignis::cpu
