// CPU kernels of 2-D pooling: max (with PyTorch's flat indices), avg and adaptive avg, forward
// and backward, plus register_pool_cpu(). Own loops rather than oneDNN: PyTorch's int64
// plane indices, dilation, divisor_override and non-uniform adaptive windows have no oneDNN
// 2.6 equivalent, and pooling is a small share of a CNN's time.
// Tensors are 4-D [N, C, H, W] in any layout; loops address them through their strides and
// run in parallel over (n, c) planes, so every plane is read and written by one thread
// (backward accumulations into overlapping windows therefore need no atomics); channels-last
// tensors run over pixels, and avg_pool2d's backward there gathers each input pixel's sum, so
// its rows run in parallel with each value written by one thread.
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "cpu/cpu_features.h"  // cpu_has_avx2
#include "cpu/loops.h"
#include "kernels/pool_windows.h"
#include "ops/nn_common.h"  // is_channels_last
#include "ops/nn_kernels.h"

namespace ignis::cpu {

namespace {

using detail::Pair2;
using detail::Pool2dParams;

/// One (n, c) plane of a 4-D tensor: element (h, w) at base[h * sh + w * sw].
template <class T>
struct Plane {
  T* base;
  int64_t sh, sw;
  T& operator()(int64_t h, int64_t w) const { return base[h * sh + w * sw]; }
};

/// Calls f(plane index, in-plane, out-plane...) for every (n, c) in parallel.
template <class T, class U, class F>
void for_planes(const Tensor& a, const Tensor& b, const F& f) {
  const int64_t n = a.size(0), c = a.size(1);
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, a.size(2) * a.size(3)));
  // The strides are read once here: Tensor::stride checks its argument, and a small plane
  // (ResNet's last 4x4 maps: 65,536 planes a batch) costs about as much as that check.
  const Shape &sa = a.strides(), &sb = b.strides();
  T* const a0 = static_cast<T*>(a.data_ptr());
  U* const b0 = static_cast<U*>(b.data_ptr());
  detail::parallel_for(0, n * c, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t pi = p0; pi < p1; ++pi) {
      const int64_t i = pi / c, j = pi % c;
      f(Plane<T>{a0 + i * sa[0] + j * sa[1], sa[2], sa[3]},
        Plane<U>{b0 + i * sb[0] + j * sb[1], sb[2], sb[3]});
    }
  });
}

/// PyTorch's max-pool step: v replaces the running maximum m (and its index) when it is
/// strictly greater, or NaN; so the first maximum wins ties and a later NaN wins. Written with
/// masks and a non-short-circuit `|` so GCC emits no branch (a branch here mispredicts about
/// half the time on real activations).
template <class T>
[[gnu::always_inline]] inline void max_step(T v, int64_t at, T& m, int64_t& best) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;  // T is float or double
  const bool take = (v > m) | (v != v);
  best ^= (best ^ at) & -int64_t(take);
  const Bits mask = Bits(0) - Bits(take);
  m = std::bit_cast<T>(Bits((std::bit_cast<Bits>(v) & mask) | (std::bit_cast<Bits>(m) & ~mask)));
}

/// The common CNN case: 2x2 windows, stride 2, no padding, dilation 1, NCHW rows contiguous.
/// The taps are fixed, so the loop body is straight-line code over two input rows instead of
/// the general window loop with its bounds and dilation.
bool is_plain_2x2(const Tensor& in, const Tensor& out, const Tensor& idx, const Pool2dParams& p) {
  const Pair2 s = *p.stride;
  return p.kernel[0] == 2 && p.kernel[1] == 2 && s[0] == 2 && s[1] == 2 && p.padding[0] == 0 &&
         p.padding[1] == 0 && p.dilation[0] == 1 && p.dilation[1] == 1 && in.stride(3) == 1 &&
         out.stride(3) == 1 && idx.stride(3) == 1 && 2 * out.size(2) <= in.size(2) && 2 * out.size(3) <= in.size(3);
}

/// One output row of the 2x2 pool from input rows r0, r1 (float, plane row offset `base`),
/// in scalar code; returns nothing, fills y[ow0, Wo) and ix[ow0, Wo).
template <class T>
void max_row_2x2(const T* r0, const T* r1, T* y, int64_t* ix, int64_t ow0, int64_t Wo,
                 int64_t base, int64_t W) {
  for (int64_t ow = ow0; ow < Wo; ++ow) {
    const int64_t w = 2 * ow;
    T m = r0[w];  // the first tap: taken even when it is -inf
    int64_t best = base + w;
    max_step(r0[w + 1], base + w + 1, m, best);
    max_step(r1[w], base + W + w, m, best);
    max_step(r1[w + 1], base + W + w + 1, m, best);
    y[ow] = m;
    ix[ow] = best;
  }
}

#if defined(__x86_64__)
// The AVX2 kernels below are functions (and member functions) with the target attribute, not
// lambdas: a lambda does not take its enclosing function's target, so intrinsics inside one
// fail to build where the library's baseline is plain x86-64.

/// max_step on eight floats: v (with plane indices `at`) replaces m (and best) where it is
/// greater or NaN.
[[gnu::target("avx2,fma")]] inline void max_step8(__m256 v, __m256i at, __m256& m, __m256i& best) {
  const __m256 take =
      _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  m = _mm256_blendv_ps(m, v, take);
  best = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(best), _mm256_castsi256_ps(at), take));
}

/// Stores eight maxima and their int32 plane indices widened to int64.
[[gnu::target("avx2,fma")]] inline void store8(__m256 m, __m256i best, float* y, int64_t* ix) {
  _mm256_storeu_ps(y, m);
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(ix), _mm256_cvtepi32_epi64(_mm256_castsi256_si128(best)));
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(ix + 4), _mm256_cvtepi32_epi64(_mm256_extracti128_si256(best, 1)));
}

/// The 16 floats from p split into their even and odd columns.
[[gnu::target("avx2,fma")]] inline void split_even_odd(const float* p, __m256& even, __m256& odd) {
  const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))), 0xD8));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))), 0xD8));
}

/// The four taps of eight 2x2 windows, in tap order (row 0 left, row 0 right, row 1 left,
/// row 1 right), the first at plane indices at0: stores the eight maxima and their indices
/// (max_step8's rule). The indices are computed in int32 (callers check that a plane is
/// below 2^31 elements).
[[gnu::target("avx2,fma")]] inline void max8_2x2_avx2(__m256 a, __m256 b, __m256 c, __m256 d,
                                                     __m256i at0, int64_t W, float* y,
                                                     int64_t* ix) {
  const __m256i one = _mm256_set1_epi32(1), below = _mm256_add_epi32(at0, _mm256_set1_epi32(int32_t(W)));
  __m256 m = a;  // the first tap: taken even when it is -inf
  __m256i best = at0;
  max_step8(b, _mm256_add_epi32(at0, one), m, best);
  max_step8(c, below, m, best);
  max_step8(d, _mm256_add_epi32(below, one), m, best);
  store8(m, best, y, ix);
}

/// Eight outputs per step: the even and odd columns of both rows are separated with shuffles,
/// then max8_2x2_avx2. Returns the first output it did not do (the scalar loop finishes the
/// row).
[[gnu::target("avx2,fma")]] int64_t max_row_2x2_avx2(const float* r0, const float* r1, float* y,
                                                    int64_t* ix, int64_t Wo, int64_t base,
                                                    int64_t W) {
  const __m256i lane = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  int64_t ow = 0;
  for (; ow + 8 <= Wo; ow += 8) {
    __m256 a, b, c, d;
    split_even_odd(r0 + 2 * ow, a, b);
    split_even_odd(r1 + 2 * ow, c, d);
    // The first tap of output ow + k is at base + 2 * (ow + k).
    const __m256i at0 = _mm256_add_epi32(_mm256_set1_epi32(int32_t(base + 2 * ow)), lane);
    max8_2x2_avx2(a, b, c, d, at0, W, y + ow, ix + ow);
  }
  return ow;
}

/// Channels-last: eight channels of one output pixel per step, from the four tap vectors.
/// Returns the first channel it did not do.
[[gnu::target("avx2,fma")]] int64_t max_pixel_2x2_avx2(const float* t0, const float* t1,
                                                      const float* t2, const float* t3,
                                                      float* y, int64_t* ix, int64_t C,
                                                      int64_t at0, int64_t W) {
  const __m256i base = _mm256_set1_epi32(int32_t(at0));
  int64_t c = 0;
  for (; c + 8 <= C; c += 8)
    max8_2x2_avx2(_mm256_loadu_ps(t0 + c), _mm256_loadu_ps(t1 + c), _mm256_loadu_ps(t2 + c),
                  _mm256_loadu_ps(t3 + c), base, W, y + c, ix + c);
  return c;
}

/// Channels-last, any window: eight channels of one output pixel per step over the window's
/// ntaps valid taps (their channel vectors and plane indices, in (h, w) order); `first` is the
/// index a window of -inf keeps. Returns the first channel it did not do.
[[gnu::target("avx2,fma")]] int64_t max_pixel_avx2(
    const float* const* taps,
    const int32_t* at,
    int ntaps,
    int32_t first,
    float* y,
    int64_t* ix,
    int64_t C) {
  int64_t c = 0;
  for (; c + 8 <= C; c += 8) {
    __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256i best = _mm256_set1_epi32(first);
    for (int t = 0; t < ntaps; ++t)
      max_step8(_mm256_loadu_ps(taps[t] + c), _mm256_set1_epi32(at[t]), m, best);
    store8(m, best, y + c, ix + c);
  }
  return c;
}

/// One NCHW plane's window rows for an output row (max and average pooling): valid input rows
/// h0, h0 + dh, ... < h1 at `row_stride` apart from `x`, and kw taps per row: output ow reads
/// columns s * ow - pad + j * dw.
struct RowTaps {
  const float* x;
  int64_t W, h0, h1, dh, row_stride;
  int64_t s, dw, kw, pad;
};

/// Eight floats at p, p + s, ..., p + 7 s: one load for s = 1; for s = 2, when `split` (the
/// 16 floats from p may be read), the even columns of split_even_odd; otherwise a gather of
/// exactly those eight.
[[gnu::target("avx2,fma")]] inline __m256 load_strided(
    const float* p, int64_t s, __m256i lanes, bool split) {
  if (s == 1) return _mm256_loadu_ps(p);
  if (s == 2 && split) {
    __m256 even, odd;
    split_even_odd(p, even, odd);
    return even;
  }
  return _mm256_i32gather_ps(p, lanes, 4);
}

/// Output columns [lo, hi) of one NCHW output row (vector_columns: their windows inside the
/// row, hi - lo >= 8) in blocks of eight, the last block ending at hi (overlapping the one
/// before it: those outputs are written twice, with the same values). For each block,
/// acc.start(first) with the eight outputs' plane indices of their first tap, acc.tap(v, at)
/// for every tap in the scalar loop's (h, w) order, then acc.finish(ow).
template <class Acc>
[[gnu::target("avx2,fma")]] inline void row_blocks(const RowTaps& t, int64_t lo, int64_t hi,
                                                   Acc& acc) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lanes = _mm256_mullo_epi32(lane, _mm256_set1_epi32(int32_t(t.s)));
  for (int64_t ow = lo;; ow += 8) {
    if (ow + 8 > hi) ow = hi - 8;  // the last block ends at hi
    const int64_t w0 = t.s * ow - t.pad;
    // Stride 2 splits 16 loaded floats while the last tap's 16 stay inside the row.
    const bool split = w0 + (t.kw - 1) * t.dw + 16 <= t.W;
    acc.start(_mm256_add_epi32(_mm256_set1_epi32(int32_t(t.h0 * t.W + w0)), lanes));
    for (int64_t h = t.h0; h < t.h1; h += t.dh) {
      const float* row = t.x + h * t.row_stride;
      for (int64_t kw = 0; kw < t.kw; ++kw) {
        const int64_t w = w0 + kw * t.dw;
        acc.tap(load_strided(row + w, t.s, lanes, split),
                _mm256_add_epi32(_mm256_set1_epi32(int32_t(h * t.W + w)), lanes));
      }
    }
    acc.finish(ow);
    if (ow + 8 >= hi) break;
  }
}

/// row_blocks' accumulator of max pooling: max_step8's rule.
struct MaxOfTaps {
  float* y;
  int64_t* ix;
  __m256 m;
  __m256i best;
  [[gnu::target("avx2,fma")]] void start(__m256i first) {
    m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    best = first;  // a window of -inf keeps its first tap's index
  }
  [[gnu::target("avx2,fma")]] void tap(__m256 v, __m256i at) { max_step8(v, at, m, best); }
  [[gnu::target("avx2,fma")]] void finish(int64_t ow) { store8(m, best, y + ow, ix + ow); }
};

/// row_blocks' accumulator of average pooling (dilation 1): each output's taps summed in
/// double from 0 in the scalar loop's order and divided by `divisor`, so the results are the
/// scalar loop's to the bit.
struct MeanOfTaps {
  float* y;
  __m256d div;
  __m256d sum_lo, sum_hi;
  [[gnu::target("avx2,fma")]] void start(__m256i) { sum_lo = sum_hi = _mm256_setzero_pd(); }
  [[gnu::target("avx2,fma")]] void tap(__m256 v, __m256i) {
    sum_lo = _mm256_add_pd(sum_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    sum_hi = _mm256_add_pd(sum_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  [[gnu::target("avx2,fma")]] void finish(int64_t ow) {
    const __m128 lo4 = _mm256_cvtpd_ps(_mm256_div_pd(sum_lo, div));
    const __m128 hi4 = _mm256_cvtpd_ps(_mm256_div_pd(sum_hi, div));
    _mm256_storeu_ps(y + ow, _mm256_set_m128(hi4, lo4));
  }
};

/// Max pooling's columns [lo, hi) of one NCHW output row (row_blocks).
[[gnu::target("avx2,fma")]] void max_row_avx2(
    const RowTaps& t, int64_t lo, int64_t hi, float* y, int64_t* ix) {
  MaxOfTaps acc{y, ix, {}, {}};
  row_blocks(t, lo, hi, acc);
}

/// Average pooling's columns [lo, hi) of one NCHW output row (row_blocks, dilation 1).
[[gnu::target("avx2,fma")]] void avg_row_avx2(
    const RowTaps& t, int64_t lo, int64_t hi, double divisor, float* y) {
  MeanOfTaps acc{y, _mm256_set1_pd(divisor), {}, {}};
  row_blocks(t, lo, hi, acc);
}
#endif

template <class T>
void max_forward_2x2(const Tensor& in, const Tensor& out, const Tensor& idx) {
  const int64_t W = in.size(3), Ho = out.size(2), Wo = out.size(3);
  const int64_t c = in.size(1);
  const Shape& xs = in.strides();
  const Shape& ys = out.strides();
  const Shape& is = idx.strides();
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, Ho * Wo * 4));
  const bool use_avx2 = cpu_has_avx2() && in.size(2) * W < (int64_t(1) << 31);
  detail::parallel_for(0, in.size(0) * c, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t pi = p0; pi < p1; ++pi) {
      const int64_t i = pi / c, j = pi % c;
      const T* x = static_cast<const T*>(in.data_ptr()) + i * xs[0] + j * xs[1];
      T* y = static_cast<T*>(out.data_ptr()) + i * ys[0] + j * ys[1];
      int64_t* ix = static_cast<int64_t*>(idx.data_ptr()) + i * is[0] + j * is[1];
      for (int64_t oh = 0; oh < Ho; ++oh) {
        const T* r0 = x + 2 * oh * xs[2];
        const T* r1 = r0 + xs[2];
        T* yr = y + oh * ys[2];
        int64_t* ir = ix + oh * is[2];
        const int64_t base = 2 * oh * W;
        int64_t done = 0;
#if defined(__x86_64__)
        if constexpr (std::is_same_v<T, float>)
          if (use_avx2) done = max_row_2x2_avx2(r0, r1, yr, ir, Wo, base, W);
#endif
        max_row_2x2(r0, r1, yr, ir, done, Wo, base, W);
      }
    }
  });
}

/// The 2x2 / stride 2 case on channels-last tensors: the channels of one pixel are contiguous,
/// so each output pixel is an elementwise maximum over four contiguous channel vectors, which
/// GCC vectorises across the channels (the plane-by-plane loop would stride by C).
bool is_plain_2x2_channels_last(const Tensor& in, const Tensor& out, const Tensor& idx,
                                const Pool2dParams& p) {
  const Pair2 s = *p.stride;
  return p.kernel[0] == 2 && p.kernel[1] == 2 && s[0] == 2 && s[1] == 2 && p.padding[0] == 0 &&
         p.padding[1] == 0 && p.dilation[0] == 1 && p.dilation[1] == 1 &&
         detail::is_channels_last(in) && detail::is_channels_last(out) &&
         detail::is_channels_last(idx) && 2 * out.size(2) <= in.size(2) &&
         2 * out.size(3) <= in.size(3);
}

template <class T>
void max_forward_2x2_channels_last(const Tensor& in, const Tensor& out, const Tensor& idx) {
  const int64_t N = in.size(0), C = in.size(1), W = in.size(3), Ho = out.size(2), Wo = out.size(3);
  const int64_t H = in.size(2);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  int64_t* ix = static_cast<int64_t*>(idx.data_ptr());
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, 4 * C));
  const bool use_avx2 = cpu_has_avx2() && H * W < (int64_t(1) << 31);
  detail::parallel_for(0, N * Ho * Wo, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t q = p0; q < p1; ++q) {
      const int64_t n = q / (Ho * Wo), oh = (q / Wo) % Ho, ow = q % Wo;
      const int64_t h = 2 * oh, w = 2 * ow;
      const T* t0 = x + ((n * H + h) * W + w) * C;  // taps (h, w), (h, w+1), (h+1, w), (h+1, w+1)
      const T* t1 = t0 + C;
      const T* t2 = t0 + W * C;
      const T* t3 = t2 + C;
      T* yo = y + q * C;
      int64_t* io = ix + q * C;
      const int64_t at0 = h * W + w;  // PyTorch's index within the (n, c) plane
      int64_t c0 = 0;
#if defined(__x86_64__)
      if constexpr (std::is_same_v<T, float>)
        if (use_avx2) c0 = max_pixel_2x2_avx2(t0, t1, t2, t3, yo, io, C, at0, W);
#endif
      for (int64_t c = c0; c < C; ++c) {
        T m = t0[c];  // the first tap: taken even when it is -inf
        int64_t best = at0;
        max_step(t1[c], at0 + 1, m, best);
        max_step(t2[c], at0 + W, m, best);
        max_step(t3[c], at0 + W + 1, m, best);
        yo[c] = m;
        io[c] = best;
      }
    }
  });
}

/// Max pooling on channels-last tensors, any window: each output pixel's C channels are an
/// elementwise maximum over its valid taps' contiguous channel vectors, taken in the plane
/// loop's (h, w) order with max_step's rule (the walk plane by plane would stride by C).
template <class T>
void max_forward_channels_last(
    const Tensor& in, const Tensor& out, const Tensor& idx, const Pool2dParams& p) {
  const int64_t N = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const int64_t Ho = out.size(2), Wo = out.size(3);
  const Pair2 s = *p.stride, d = p.dilation, k = p.kernel, pad = p.padding;
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  int64_t* ix = static_cast<int64_t*>(idx.data_ptr());
  const bool use_avx2 = cpu_has_avx2() && H * W < (int64_t(1) << 31);
  const int64_t grain =
      std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, k[0] * k[1] * C));
  detail::parallel_for(0, N * Ho * Wo, grain, [&](int64_t q0, int64_t q1) {
    std::vector<const T*> taps(size_t(k[0] * k[1]));
    std::vector<int32_t> at(size_t(k[0] * k[1]));
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n = q / (Ho * Wo), oh = q / Wo % Ho, ow = q % Wo;
      int64_t h0 = oh * s[0] - pad[0], w0 = ow * s[1] - pad[1];
      const int64_t h1 = std::min(h0 + (k[0] - 1) * d[0] + 1, H);
      const int64_t w1 = std::min(w0 + (k[1] - 1) * d[1] + 1, W);
      while (h0 < 0) h0 += d[0];
      while (w0 < 0) w0 += d[1];
      int ntaps = 0;
      for (int64_t h = h0; h < h1; h += d[0])
        for (int64_t w = w0; w < w1; w += d[1]) {
          taps[size_t(ntaps)] = x + ((n * H + h) * W + w) * C;
          at[size_t(ntaps++)] = int32_t(h * W + w);
        }
      T* yo = y + q * C;
      int64_t* io = ix + q * C;
      // The first valid tap is the default index: a window of -inf keeps it; -1 for a
      // window with no tap in the input (see max_forward).
      const int64_t first = ntaps > 0 ? h0 * W + w0 : -1;
      int64_t c0 = 0;
#if defined(__x86_64__)
      if constexpr (std::is_same_v<T, float>)
        if (use_avx2) c0 = max_pixel_avx2(taps.data(), at.data(), ntaps, int32_t(first), yo, io, C);
#endif
      for (int64_t c = c0; c < C; ++c) {
        T m = -std::numeric_limits<T>::infinity();
        int64_t best = first;
        for (int t = 0; t < ntaps; ++t)
          max_step(taps[size_t(t)][c], int64_t(at[size_t(t)]), m, best);
        yo[c] = m;
        io[c] = best;
      }
    }
  });
}

/// The output columns [lo, hi) of an NCHW pooling row that max_row_avx2 and avg_row_avx2 take:
/// those whose window lies inside the row, when there are at least 8 (else none: lo == hi).
struct InteriorColumns {
  int64_t lo, hi;
};
InteriorColumns vector_columns(
    int64_t W, int64_t Wo, int64_t k, int64_t s, int64_t pad, int64_t d) {
  const int64_t lo = (pad + s - 1) / s;        // the first ow with ow * s - pad >= 0
  const int64_t last_tap = (k - 1) * d - pad;  // the last tap's column is ow * s + last_tap
  const int64_t hi = W - 1 - last_tap < 0 ? lo : std::min(Wo, (W - 1 - last_tap) / s + 1);
  // None is {0, 0}, not {lo, lo}: the callers' scalar loops take [0, lo) and [hi, Wo), and lo
  // can lie past Wo (a dilated window padded by more than half its kernel).
  return hi - lo >= 8 ? InteriorColumns{lo, hi} : InteriorColumns{0, 0};
}

// Strides are read once into locals: Tensor::stride() is an out-of-line, checked call, and in
// the inner loops it took 3/4 of the max-pool time.
template <class T>
void max_forward(const Tensor& in, const Tensor& out, const Tensor& idx, const Pool2dParams& p) {
  if (is_plain_2x2(in, out, idx, p)) return max_forward_2x2<T>(in, out, idx);
  if (is_plain_2x2_channels_last(in, out, idx, p))
    return max_forward_2x2_channels_last<T>(in, out, idx);
  if (in.size(1) > 1 && detail::is_channels_last(in) && detail::is_channels_last(out) &&
      detail::is_channels_last(idx))
    return max_forward_channels_last<T>(in, out, idx, p);
  const int64_t H = in.size(2), W = in.size(3), Ho = out.size(2), Wo = out.size(3);
  const Pair2 s = *p.stride, d = p.dilation, k = p.kernel, pad = p.padding;
  const int64_t n = in.size(0), c = in.size(1);
  const Shape& xs = in.strides();
  const Shape& ys = out.strides();
  const Shape& is = idx.strides();
  const bool vector_rows =
      cpu_has_avx2() && H * W < (int64_t(1) << 31) && xs[3] == 1 && ys[3] == 1 && is[3] == 1;
  const InteriorColumns cols = vector_columns(W, Wo, k[1], s[1], pad[1], d[1]);
  detail::parallel_for(0, n * c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t pi = p0; pi < p1; ++pi) {
      const int64_t i = pi / c, j = pi % c;
      const Plane<const T> x{static_cast<const T*>(in.data_ptr()) + i * xs[0] + j * xs[1], xs[2], xs[3]};
      const Plane<T> y{static_cast<T*>(out.data_ptr()) + i * ys[0] + j * ys[1], ys[2], ys[3]};
      const Plane<int64_t> ix{static_cast<int64_t*>(idx.data_ptr()) + i * is[0] + j * is[1], is[2],
                              is[3]};
      for (int64_t oh = 0; oh < Ho; ++oh) {
        int64_t h0 = oh * s[0] - pad[0];
        const int64_t h1 = std::min(h0 + (k[0] - 1) * d[0] + 1, H);
        while (h0 < 0) h0 += d[0];
        const auto scalar_columns = [&](int64_t ow0, int64_t ow1) {
          for (int64_t ow = ow0; ow < ow1; ++ow) {
            int64_t w0 = ow * s[1] - pad[1];
            const int64_t w1 = std::min(w0 + (k[1] - 1) * d[1] + 1, W);
            while (w0 < 0) w0 += d[1];
            // The first valid tap is the default: a window of -inf keeps its index. A dilated
            // window can miss the input altogether: -inf with index -1, which the backward
            // skips (PyTorch stores an index past the tap, and its backward writes there).
            int64_t best = h0 < h1 && w0 < w1 ? h0 * W + w0 : -1;
            T m = -std::numeric_limits<T>::infinity();
            for (int64_t h = h0; h < h1; h += d[0])
              for (int64_t w = w0; w < w1; w += d[1]) max_step(x(h, w), h * W + w, m, best);
            y(oh, ow) = m;
            ix(oh, ow) = best;
          }
        };
        // Columns whose windows lie inside the row go eight at a time; the scalar loop takes
        // the rest (the borders, and every column when the row is not contiguous).
        int64_t v0 = 0, v1 = 0;
#if defined(__x86_64__)
        if constexpr (std::is_same_v<T, float>)
          if (vector_rows && h0 < h1) {
            const RowTaps taps{x.base, W, h0, h1, d[0], xs[2], s[1], d[1], k[1], pad[1]};
            v0 = cols.lo, v1 = cols.hi;
            if (v1 > v0) max_row_avx2(taps, v0, v1, &y(oh, 0), &ix(oh, 0));
          }
#endif
        scalar_columns(0, v0);
        scalar_columns(v1, Wo);
      }
    }
  });
}

/// max-pool backward on channels-last tensors: pixel by pixel, so every access runs along
/// the contiguous channels (plane by plane, each plane would touch every cache line of the
/// tensor). Parallel over images: windows never cross images, so no two threads add into
/// the same element.
template <class T>
void max_backward_channels_last(const Tensor& go, const Tensor& idx, const Tensor& gi) {
  const int64_t N = gi.size(0), C = gi.size(1), H = gi.size(2), W = gi.size(3);
  const int64_t Ho = go.size(2), Wo = go.size(3);
  const T* g = static_cast<const T*>(go.data_ptr());
  const int64_t* ix = static_cast<const int64_t*>(idx.data_ptr());
  T* d = static_cast<T*>(gi.data_ptr());
  detail::parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      T* dn = d + n * H * W * C;
      std::fill(dn, dn + H * W * C, T(0));
      const int64_t q0 = n * Ho * Wo;
      for (int64_t q = q0; q < q0 + Ho * Wo; ++q)
        for (int64_t c = 0; c < C; ++c)
          if (const int64_t k = ix[q * C + c]; k >= 0) dn[k * C + c] += g[q * C + c];
    }
  });
}

template <class T>
void max_backward(const Tensor& go, const Tensor& idx, const Tensor& gi) {
  if (detail::is_channels_last(go) && detail::is_channels_last(idx) && detail::is_channels_last(gi))
    return max_backward_channels_last<T>(go, idx, gi);
  const int64_t H = gi.size(2), W = gi.size(3), Ho = go.size(2), Wo = go.size(3);
  const int64_t n = gi.size(0), c = gi.size(1);
  const Shape& gs = go.strides();
  const Shape& is = idx.strides();
  const Shape& ds = gi.strides();
  const bool dense_planes = ds[3] == 1 && ds[2] == W;
  detail::parallel_for(0, n * c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t pi = p0; pi < p1; ++pi) {
      const int64_t i = pi / c, j = pi % c;
      const Plane<const T> g{static_cast<const T*>(go.data_ptr()) + i * gs[0] + j * gs[1], gs[2], gs[3]};
      const Plane<const int64_t> ix{
          static_cast<const int64_t*>(idx.data_ptr()) + i * is[0] + j * is[1], is[2], is[3]};
      const Plane<T> d{static_cast<T*>(gi.data_ptr()) + i * ds[0] + j * ds[1], ds[2], ds[3]};
      if (dense_planes) {  // the index is the offset: no division per output
        std::fill(d.base, d.base + H * W, T(0));
        for (int64_t oh = 0; oh < Ho; ++oh) {
          const T* grow = &g(oh, 0);
          const int64_t* irow = &ix(oh, 0);
          for (int64_t ow = 0; ow < Wo; ++ow)
            if (const int64_t k = irow[ow * is[3]]; k >= 0) d.base[k] += grow[ow * gs[3]];
        }
        continue;
      }
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) d(h, w) = T(0);
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const int64_t k = ix(oh, ow);
          if (k >= 0) d(k / W, k % W) += g(oh, ow);  // -1: a window with no tap
        }
    }
  });
}

/// PyTorch's avg-pool window for output (oh, ow): the clipped bounds and the divisor.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};
AvgWindow avg_window(int64_t oh, int64_t ow, int64_t H, int64_t W, const Pool2dParams& p) {
  const Pair2 s = *p.stride;
  int64_t h0 = oh * s[0] - p.padding[0], w0 = ow * s[1] - p.padding[1];
  int64_t h1 = std::min(h0 + p.kernel[0], H + p.padding[0]);
  int64_t w1 = std::min(w0 + p.kernel[1], W + p.padding[1]);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);  // counts padding, not past it
  h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H), w1 = std::min(w1, W);
  double div = p.divisor_override        ? double(*p.divisor_override)
               : p.count_include_pad     ? double(padded_size)
                                         : double((h1 - h0) * (w1 - w0));
  return {h0, h1, w0, w1, div};
}

// Channels-last average pooling runs along each pixel's channels in GCC vectors of 32 bytes,
// a few vectors per block, so a block's running sums stay in registers across the window's
// taps (a running row of C sums in memory took a load and a store per tap). GCC vectors
// build for any x86-64 baseline (two SSE halves where AVX is absent).
using Double4 [[gnu::vector_size(32)]] = double;
template <class T>
struct Lanes {
  using Vector [[gnu::vector_size(32)]] = T;
  static constexpr int64_t kCount = 32 / sizeof(T);
};

/// o[c] = T(sum of channel c of window a's pixels / divisor), for 4 * kVectors channels of x
/// (pixel (h, w) at x + h * sh + w * sw): each channel sums in double in (h, w) order,
/// starting from 0 as the plane loops do.
template <int kVectors, class T>
[[gnu::always_inline]] inline void average_channels(
    const T* x, int64_t sh, int64_t sw, const AvgWindow& a, T* o) {
  Double4 sum[kVectors] = {};
  for (int64_t h = a.h0; h < a.h1; ++h)
    for (int64_t w = a.w0; w < a.w1; ++w) {
      const T* px = x + h * sh + w * sw;
      // Widened element by element: GCC makes one vcvtps2pd of it, where
      // __builtin_convertvector of a float vector went through halves and the stack.
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v)
        sum[v] += Double4{
            double(px[4 * v]), double(px[4 * v + 1]), double(px[4 * v + 2]), double(px[4 * v + 3])};
    }
#pragma GCC unroll 8
  for (int v = 0; v < kVectors; ++v) {
    const Double4 mean = sum[v] / a.divisor;
    for (int i = 0; i < 4; ++i) o[4 * v + i] = T(mean[i]);
  }
}

/// Average pooling over channels-last tensors, for any window rule: window(oh, ow) gives an
/// AvgWindow. Each channel of an output pixel sums its window's pixels in double, in the plane
/// loops' (h, w) order (average_forward), so the results are the plane loops' to the bit; with
/// kZeroIfEmpty, a window with no pixels gives 0 (avg_pool2d's rule; adaptive windows are never
/// empty).
template <class T, bool kZeroIfEmpty, class Window>
void avg_forward_cl(const Tensor& in, const Tensor& out, const Window& window) {
  const int64_t N = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const int64_t Ho = out.size(2), Wo = out.size(3);
  const Shape &si = in.strides(), &so = out.strides();
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t per_pixel = std::max<int64_t>(1, C * H * W / std::max<int64_t>(1, Ho * Wo));
  detail::parallel_for(
      0,
      N * Ho * Wo,
      std::max<int64_t>(1, detail::kGrainSize / per_pixel),
      [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t n = p / (Ho * Wo), oh = p / Wo % Ho, ow = p % Wo;
          const AvgWindow a = window(oh, ow);
          T* o = y + n * so[0] + oh * so[2] + ow * so[3];
          if (kZeroIfEmpty && (a.h0 >= a.h1 || a.w0 >= a.w1)) {
            std::fill_n(o, C, T(0));
            continue;
          }
          const T* xn = x + n * si[0];
          int64_t c = 0;
          for (; c + 32 <= C; c += 32) average_channels<8>(xn + c, si[2], si[3], a, o + c);
          for (; c + 4 <= C; c += 4) average_channels<1>(xn + c, si[2], si[3], a, o + c);
          for (; c < C; ++c) {
            double sum = 0;
            for (int64_t h = a.h0; h < a.h1; ++h)
              for (int64_t w = a.w0; w < a.w1; ++w) sum += double(xn[c + h * si[2] + w * si[3]]);
            o[c] = T(sum / a.divisor);
          }
        }
      });
}

/// The backward of avg_forward_cl for any window rule (adaptive pooling's): each image's
/// gradient zeroed, then every output pixel's share added to its window in (oh, ow) order, as
/// the plane loops add them.
template <class T, class Window>
void scatter_backward_cl(const Tensor& go, const Tensor& gi, const Window& window) {
  const int64_t N = gi.size(0), C = gi.size(1), H = gi.size(2), W = gi.size(3);
  const int64_t Ho = go.size(2), Wo = go.size(3);
  const Shape &sg = go.strides(), &sd = gi.strides();
  const T* g = static_cast<const T*>(go.data_ptr());
  T* d = static_cast<T*>(gi.data_ptr());
  detail::parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
    std::vector<T> share(static_cast<size_t>(C));
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) std::fill_n(d + n * sd[0] + h * sd[2] + w * sd[3], C, T(0));
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const AvgWindow a = window(oh, ow);
          const T* gr = g + n * sg[0] + oh * sg[2] + ow * sg[3];
          for (int64_t c = 0; c < C; ++c) share[size_t(c)] = T(double(gr[c]) / a.divisor);
          for (int64_t h = a.h0; h < a.h1; ++h)
            for (int64_t w = a.w0; w < a.w1; ++w) {
              T* row = d + n * sd[0] + h * sd[2] + w * sd[3];
              for (int64_t c = 0; c < C; ++c) row[c] += share[size_t(c)];
            }
        }
    }
  });
}

/// The average over window a of plane x, summed in double in (h, w) order. With
/// kZeroIfEmpty, a window entirely in the padding (possible with ceil_mode) averages to 0.
template <bool kZeroIfEmpty, class T>
T window_average(Plane<T> x, const AvgWindow& a) {
  if (kZeroIfEmpty && (a.h0 >= a.h1 || a.w0 >= a.w1)) return T(0);
  double sum = 0;
  for (int64_t h = a.h0; h < a.h1; ++h)
    for (int64_t w = a.w0; w < a.w1; ++w) sum += double(x(h, w));
  return T(sum / a.divisor);
}

/// Average pooling forward for any window rule (see avg_forward_cl), planes or pixel rows.
template <class T, bool kZeroIfEmpty, class Window>
void average_forward(const Tensor& in, const Tensor& out, const Window& window) {
  if (detail::channels_inner(in, out)) return avg_forward_cl<T, kZeroIfEmpty>(in, out, window);
  const int64_t Ho = out.size(2), Wo = out.size(3);
  for_planes<T, T>(in, out, [&](Plane<T> x, Plane<T> y) {
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow)
        y(oh, ow) = window_average<kZeroIfEmpty>(x, window(oh, ow));
  });
}

/// Average pooling backward for any window rule, planes or pixel rows.
template <class T, class Window>
void average_backward(const Tensor& go, const Tensor& gi, const Window& window) {
  if (detail::channels_inner(gi, go)) return scatter_backward_cl<T>(go, gi, window);
  const int64_t H = gi.size(2), W = gi.size(3), Ho = go.size(2), Wo = go.size(3);
  for_planes<T, T>(gi, go, [&](Plane<T> d, Plane<T> g) {
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) d(h, w) = T(0);
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const AvgWindow a = window(oh, ow);
        const T v = T(double(g(oh, ow)) / a.divisor);
        for (int64_t h = a.h0; h < a.h1; ++h)
          for (int64_t w = a.w0; w < a.w1; ++w) d(h, w) += v;
      }
  });
}

// The window rules take the sizes as numbers read once: Tensor::size checks its argument,
// which costs as much as a 4x4 window's sum when done per window.

/// avg_pool2d's forward on NCHW float rows: the columns whose window lies inside the row go
/// eight at a time (avg_row_avx2), the rest through the scalar window loop; the same values.
/// Returns false (nothing done) where it does not apply.
template <class T>
bool avg_forward_rows(const Tensor& in, const Tensor& out, const Pool2dParams& p) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>) {
    const int64_t H = in.size(2), W = in.size(3), Ho = out.size(2), Wo = out.size(3);
    if (!cpu_has_avx2() || detail::channels_inner(in, out) || in.stride(3) != 1 || out.stride(3) != 1)
      return false;
    const Pair2 s = *p.stride;
    const InteriorColumns cols = vector_columns(W, Wo, p.kernel[1], s[1], p.padding[1], 1);
    if (cols.hi == cols.lo) return false;
    for_planes<T, T>(in, out, [&](Plane<T> x, Plane<T> y) {
      for (int64_t oh = 0; oh < Ho; ++oh) {
        const auto scalar_columns = [&](int64_t ow0, int64_t ow1) {
          for (int64_t ow = ow0; ow < ow1; ++ow)
            y(oh, ow) = window_average<true>(x, avg_window(oh, ow, H, W, p));
        };
        // Every interior column of a row has the same rows, and so the same divisor.
        const AvgWindow a = avg_window(oh, cols.lo, H, W, p);
        if (a.h0 >= a.h1) {
          scalar_columns(0, Wo);
          continue;
        }
        const RowTaps taps{x.base, W, a.h0, a.h1, 1, x.sh, s[1], 1, p.kernel[1], p.padding[1]};
        avg_row_avx2(taps, cols.lo, cols.hi, a.divisor, &y(oh, 0));
        scalar_columns(0, cols.lo);
        scalar_columns(cols.hi, Wo);
      }
    });
    return true;
  }
#endif
  return false;
}

template <class T>
void avg_forward(const Tensor& in, const Tensor& out, const Pool2dParams& p) {
  if (avg_forward_rows<T>(in, out, p)) return;
  const int64_t H = in.size(2), W = in.size(3);
  average_forward<T, true>(
      in, out, [&](int64_t oh, int64_t ow) { return avg_window(oh, ow, H, W, p); });
}

/// share[c] = g[c] / divisor rounded to T, as the plane loops compute it (in double). For
/// float with a divisor exact in float, the float division gives the same bits: a quotient
/// rounded to double (53 >= 2 * 24 + 2 bits) and then to float is the quotient rounded to
/// float (double rounding is innocuous for division at that width).
template <class T>
void divide_shares(const T* g, int64_t C, double divisor, T* share) {
  if constexpr (std::is_same_v<T, float>)
    if (double(float(divisor)) == divisor) {
      const float d = float(divisor);
      for (int64_t c = 0; c < C; ++c) share[c] = g[c] / d;
      return;
    }
  for (int64_t c = 0; c < C; ++c) share[c] = T(double(g[c]) / divisor);
}

/// out[c] = the sum, from 0 in (row, ow) order, of channel c of the share pixels [ow0, ow1)
/// of each of nrows rows (a row holds pixels C values apart; rows[r] + offset is the block's
/// first channel), for kVectors vectors of channels.
template <int kVectors, class T>
[[gnu::always_inline]] inline void gather_channels(
    const T* const* rows,
    int64_t nrows,
    int64_t offset,
    int64_t ow0,
    int64_t ow1,
    int64_t C,
    T* out) {
  using Vector = typename Lanes<T>::Vector;
  Vector acc[kVectors] = {};
  for (int64_t r = 0; r < nrows; ++r)
    for (int64_t ow = ow0; ow < ow1; ++ow) {
      const T* share = rows[r] + offset + ow * C;
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) {
        Vector x;
        std::memcpy(&x, share + Lanes<T>::kCount * v, sizeof x);
        acc[v] += x;
      }
    }
  std::memcpy(out, acc, sizeof acc);
}

/// avg_pool2d's backward on channels-last tensors, as a gather: each input pixel adds the
/// shares of the outputs whose windows hold it, in (oh, ow) order, which is the order in
/// which the scatter of the plane loops (average_backward) adds them, so the bits are the
/// same; every gradient value is written once, and rows of the images run in parallel. The
/// shares of the output rows that an input row needs are kept in a ring of
/// ceil(kernel / stride) rows, each computed once per thread.
template <class T>
void avg_backward_gather_cl(const Tensor& go, const Tensor& gi, const Pool2dParams& p) {
  const int64_t N = gi.size(0), C = gi.size(1), H = gi.size(2), W = gi.size(3);
  const int64_t Ho = go.size(2), Wo = go.size(3);
  const Pair2 s = *p.stride;
  const int64_t ring_rows = (p.kernel[0] + s[0] - 1) / s[0];
  const Shape &sg = go.strides(), &sd = gi.strides();
  const T* g = static_cast<const T*>(go.data_ptr());
  T* d = static_cast<T*>(gi.data_ptr());
  // Each input column's outputs, found once (two integer divisions each).
  std::vector<kernels::OutputRange> columns(static_cast<size_t>(W));
  for (int64_t w = 0; w < W; ++w)
    columns[size_t(w)] = kernels::covering_outputs(w, p.kernel[1], s[1], p.padding[1], Wo);
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, W * C));
  detail::parallel_for(0, N * H, grain, [&](int64_t r0, int64_t r1) {
    std::vector<T> ring(static_cast<size_t>(ring_rows * Wo * C));
    std::vector<int64_t> ring_holds(static_cast<size_t>(ring_rows), -1);  // n * Ho + oh
    std::vector<const T*> rows(static_cast<size_t>(ring_rows));
    const auto share_row = [&](int64_t n, int64_t oh) {
      const int64_t slot = oh % ring_rows;
      T* row = ring.data() + slot * Wo * C;
      if (ring_holds[size_t(slot)] != n * Ho + oh) {
        ring_holds[size_t(slot)] = n * Ho + oh;
        for (int64_t ow = 0; ow < Wo; ++ow)
          divide_shares(
              g + n * sg[0] + oh * sg[2] + ow * sg[3],
              C,
              avg_window(oh, ow, H, W, p).divisor,
              row + ow * C);
      }
      return row;
    };
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / H, h = r % H;
      const kernels::OutputRange out_rows =
          kernels::covering_outputs(h, p.kernel[0], s[0], p.padding[0], Ho);
      const int64_t nrows = std::max<int64_t>(0, out_rows.end - out_rows.first);
      for (int64_t i = 0; i < nrows; ++i) rows[size_t(i)] = share_row(n, out_rows.first + i);
      for (int64_t w = 0; w < W; ++w) {
        const auto [ow0, ow1] = columns[size_t(w)];  // first, end
        T* out = d + n * sd[0] + h * sd[2] + w * sd[3];
        constexpr int64_t kLanes = Lanes<T>::kCount;
        int64_t c = 0;
        for (; c + 8 * kLanes <= C; c += 8 * kLanes)
          gather_channels<8>(rows.data(), nrows, c, ow0, ow1, C, out + c);
        for (; c + kLanes <= C; c += kLanes)
          gather_channels<1>(rows.data(), nrows, c, ow0, ow1, C, out + c);
        for (; c < C; ++c) {
          T sum = 0;
          for (int64_t i = 0; i < nrows; ++i)
            for (int64_t ow = ow0; ow < ow1; ++ow) sum += rows[size_t(i)][ow * C + c];
          out[c] = sum;
        }
      }
    }
  });
}

template <class T>
void avg_backward(const Tensor& go, const Tensor& gi, const Pool2dParams& p) {
  if (detail::channels_inner(gi, go)) return avg_backward_gather_cl<T>(go, gi, p);
  const int64_t H = gi.size(2), W = gi.size(3);
  average_backward<T>(go, gi, [&](int64_t oh, int64_t ow) { return avg_window(oh, ow, H, W, p); });
}

/// Output (oh, ow)'s adaptive window, for an [H, W] input and [Ho, Wo] output, as an
/// AvgWindow (divisor: its pixel count).
AvgWindow adaptive_window(int64_t oh, int64_t ow, int64_t H, int64_t W, int64_t Ho, int64_t Wo) {
  const int64_t h0 = kernels::adaptive_start(oh, Ho, H), h1 = kernels::adaptive_end(oh, Ho, H);
  const int64_t w0 = kernels::adaptive_start(ow, Wo, W), w1 = kernels::adaptive_end(ow, Wo, W);
  return {h0, h1, w0, w1, double((h1 - h0) * (w1 - w0))};
}

template <class T>
void adaptive_forward(const Tensor& in, const Tensor& out) {
  const int64_t H = in.size(2), W = in.size(3), Ho = out.size(2), Wo = out.size(3);
  average_forward<T, false>(
      in, out, [&](int64_t oh, int64_t ow) { return adaptive_window(oh, ow, H, W, Ho, Wo); });
}

template <class T>
void adaptive_backward(const Tensor& go, const Tensor& gi) {
  const int64_t H = gi.size(2), W = gi.size(3), Ho = go.size(2), Wo = go.size(3);
  average_backward<T>(
      go, gi, [&](int64_t oh, int64_t ow) { return adaptive_window(oh, ow, H, W, Ho, Wo); });
}

}  // namespace

void register_pool_cpu() {
  using namespace detail;
  max_pool2d_forward_kernel.set(
      DeviceType::CPU, [](const Tensor& in, const Tensor& out, const Tensor& idx, const Pool2dParams& p) {
        visit_float_or_double(in.dtype(), [&]<class T>() { max_forward<T>(in, out, idx, p); });
      });
  max_pool2d_backward_kernel.set(
      DeviceType::CPU, [](const Tensor& go, const Tensor& idx, const Tensor& gi) {
        visit_float_or_double(go.dtype(), [&]<class T>() { max_backward<T>(go, idx, gi); });
      });
  avg_pool2d_forward_kernel.set(
      DeviceType::CPU, [](const Tensor& in, const Tensor& out, const Pool2dParams& p) {
        visit_float_or_double(in.dtype(), [&]<class T>() { avg_forward<T>(in, out, p); });
      });
  avg_pool2d_backward_kernel.set(
      DeviceType::CPU, [](const Tensor& go, const Tensor& gi, const Pool2dParams& p) {
        visit_float_or_double(go.dtype(), [&]<class T>() { avg_backward<T>(go, gi, p); });
      });
  adaptive_avg_pool2d_forward_kernel.set(DeviceType::CPU, [](const Tensor& in, const Tensor& out) {
    visit_float_or_double(in.dtype(), [&]<class T>() { adaptive_forward<T>(in, out); });
  });
  adaptive_avg_pool2d_backward_kernel.set(DeviceType::CPU, [](const Tensor& go, const Tensor& gi) {
    visit_float_or_double(go.dtype(), [&]<class T>() { adaptive_backward<T>(go, gi); });
  });
}

}  // namespace ignis::cpu
