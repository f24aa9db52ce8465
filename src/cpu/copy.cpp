// CPU kernels that move or make values without arithmetic: converting copy, fill, where,
// and the arange/linspace ranges.
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cstring>

#include "core/dispatch.h"
#include "core/tensor_impl.h"
#include "cpu/loops.h"
#include "kernels/convert.h"

namespace ignis::cpu {
namespace {
using kernels::convert;

// Note [Transposing copies]
// A copy whose output runs contiguously along one dim and whose input runs contiguously along
// another (x.transpose(0, 1).contiguous(), NCHW <-> channels-last conversions) walks the
// input with a large stride: every element read lands in a different cache line and, past a
// few KiB of stride, a different page. Such a copy goes in bands of kBand output rows; a band
// is walked kStep input rows at a time, each read kBand values long (several whole lines, so
// the prefetcher follows), and written as kBand output rows of kStep values (a whole line of
// float32). 32-bit values go in 8x8 register transposes (AVX2), with streaming stores for a
// large output as other copies (Note [Streaming stores]); other types through a small
// buffer. Measured on [4096, 4096] float32, one thread, Zen 4 VM (best of 3 or more): 32x32
// tiles through a buffer 29 ms (PyTorch 28), bands of 128 by 8 through the buffer 16 ms, by
// 16 in registers 11 ms, and with streaming stores 7.5 ms.
// The plan's two innermost dims are the pair (make_plan_memory_order puts the output's
// unit-stride dim last; the input's unit-stride dim must be the one before it).

/// Output rows per band (the input's contiguous run per read: 512 bytes of float32), and
/// input rows per step (the output's run per write).
constexpr int64_t kBand = 128, kStep = 16;

/// Whether plan p is a transposing copy: its output's unit-stride dim is the innermost and
/// its input's the one outside it, both at least a step long.
bool is_transposing_copy(const ElementwisePlan& p) {
  if (p.ndim < 2) return false;
  const int inner = p.ndim - 1, outer = p.ndim - 2;
  return p.strides[0][inner] == 1 && p.strides[1][outer] == 1 && p.strides[1][inner] != 1 &&
         p.sizes[inner] >= kStep && p.sizes[outer] >= kStep;
}

#if defined(__AVX2__)
/// out[j * out_s + k] = in[k * in_s + j] for j, k < 8: eight rows of eight 32-bit values
/// transposed in registers (moves only: the bits of every value, NaN payloads included, are
/// kept). kStream: non-temporal stores, for out 32-byte aligned with out_s a multiple of 8.
template <bool kStream>
inline void transpose_8x8_32bit(const void* in_v, int64_t in_s, void* out_v, int64_t out_s) {
  const float* in = static_cast<const float*>(in_v);
  float* out = static_cast<float*>(out_v);
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(in + k * in_s);
  // Pairs of rows interleaved: t[2i] = (r[2i][0], r[2i+1][0], r[2i][1], r[2i+1][1] | same
  // for elements 4, 5), t[2i+1] the same for elements 2, 3 | 6, 7.
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // Quads: r[q] holds element j (and j + 4 in the upper half) of rows 4h .. 4h + 3.
  for (int h = 0; h < 2; ++h) {
    const __m256 *a = t + 4 * h, *b = t + 4 * h + 2;
    r[4 * h + 0] = _mm256_shuffle_ps(a[0], b[0], _MM_SHUFFLE(1, 0, 1, 0));  // j = 0
    r[4 * h + 1] = _mm256_shuffle_ps(a[0], b[0], _MM_SHUFFLE(3, 2, 3, 2));  // j = 1
    r[4 * h + 2] = _mm256_shuffle_ps(a[1], b[1], _MM_SHUFFLE(1, 0, 1, 0));  // j = 2
    r[4 * h + 3] = _mm256_shuffle_ps(a[1], b[1], _MM_SHUFFLE(3, 2, 3, 2));  // j = 3
  }
  // Rows 0-3 and 4-7 joined: low halves give elements 0-3, high halves 4-7.
  for (int j = 0; j < 4; ++j) {
    const __m256 lo = _mm256_permute2f128_ps(r[j], r[4 + j], 0x20);
    const __m256 hi = _mm256_permute2f128_ps(r[j], r[4 + j], 0x31);
    if constexpr (kStream) {
      _mm256_stream_ps(out + j * out_s, lo);
      _mm256_stream_ps(out + (j + 4) * out_s, hi);
    } else {
      _mm256_storeu_ps(out + j * out_s, lo);
      _mm256_storeu_ps(out + (j + 4) * out_s, hi);
    }
  }
}

/// kStep (16) input rows of 8 32-bit values at in (stride in_s) into 8 output rows of 16 at
/// out (stride out_s): two register transposes.
template <bool kStream>
inline void transpose_8x16_32bit(const void* in, int64_t in_s, void* out, int64_t out_s) {
  transpose_8x8_32bit<kStream>(in, in_s, out, out_s);
  transpose_8x8_32bit<kStream>(static_cast<const float*>(in) + 8 * in_s, in_s,
                               static_cast<float*>(out) + 8, out_s);
}
#endif

/// The copy of is_transposing_copy's plans (Note [Transposing copies]): work items are a
/// band of kBand output rows of one [A, B] slice (A the outer of the two dims, B the inner),
/// each copied kStep input rows at a time.
template <class D, class S>
void copy_transposed(const ElementwisePlan& p) {
  const int ib = p.ndim - 1, ia = p.ndim - 2;
  const int64_t A = p.sizes[ia], B = p.sizes[ib];
  const int64_t out_a = p.strides[0][ia], in_b = p.strides[1][ib];
  const int64_t slices = p.numel / (A * B), bands = (A + kBand - 1) / kBand;
  D* const out = reinterpret_cast<D*>(p.data[0]);
  const S* const in = reinterpret_cast<const S*>(p.data[1]);
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / (kBand * B));
  const bool stream = use_streaming_stores<D>(p.numel);
  detail::parallel_for(0, slices * bands, grain, [&](int64_t w0, int64_t w1) {
    S buf[kStep][kBand];
    for (int64_t w = w0; w < w1; ++w) {
      // The slice's offsets from its index over the dims outside the pair.
      int64_t rest = w / bands, off_out = 0, off_in = 0;
      for (int d = ia - 1; d >= 0; --d) {
        const int64_t i = rest % p.sizes[d];
        rest /= p.sizes[d];
        off_out += i * p.strides[0][d];
        off_in += i * p.strides[1][d];
      }
      const int64_t a0 = (w % bands) * kBand, na = std::min(kBand, A - a0);
      for (int64_t b0 = 0; b0 < B; b0 += kStep) {
        const int64_t nb = std::min(kStep, B - b0);
        const S* i0 = in + off_in + b0 * in_b + a0;
        D* o0 = out + off_out + a0 * out_a + b0;
        int64_t a = 0;  // the band's rows done in registers
#if defined(__AVX2__)
        if constexpr (std::is_same_v<D, S> && sizeof(S) == 4) {
          // Streaming stores need every row's 32-byte stores aligned.
          const bool aligned = reinterpret_cast<uintptr_t>(o0) % 32 == 0 && out_a % 8 == 0;
          if (nb == kStep && stream && aligned)
            for (; a + 8 <= na; a += 8)
              transpose_8x16_32bit<true>(i0 + a, in_b, o0 + a * out_a, out_a);
          else if (nb == kStep)
            for (; a + 8 <= na; a += 8)
              transpose_8x16_32bit<false>(i0 + a, in_b, o0 + a * out_a, out_a);
        }
#endif
        if (a == na) continue;
        // The rest through the buffer: its input rows read whole first (read in place, the
        // rows of a step lie a multiple of 4 KiB apart whenever the stride is, so they share
        // one L1 set and evict each other before the next output row comes back for them).
        for (int64_t b = 0; b < nb; ++b)
          for (int64_t k = a; k < na; ++k) buf[b][k] = i0[b * in_b + k];
        for (int64_t k = a; k < na; ++k)
          for (int64_t b = 0; b < nb; ++b) o0[k * out_a + b] = convert<D>(buf[b][k]);
      }
    }
    if (stream) store_fence();  // the non-temporal stores ordered before the join
  });
}

// Note [Copies of short rows]
// A permuted copy whose innermost dim is contiguous in both tensors but short (the
// [B, H, S, D] <-> [B, S, H, D] swap of attention heads, rows of D = 64 floats) reads each row
// from another place, a page or more away: the copy waits on memory row by row. Walked run
// by run as other copies, with each run's offsets recomputed from the plan's counters, so few
// rows were in flight at once: [32,64,56,56].permute(0, 2, 1, 3) took 7-12 ms at one thread,
// against 3-4 for a bare loop over the same rows and PyTorch's 4-5. Here each block of kRows
// rows has its addresses computed and their lines prefetched first, then copied. (Taking the
// addresses from walk_range, one call per block, measured 28-62% slower in three alternating
// runs: each call starts by dividing its position by every dim.) Outputs past 4 MiB are
// streamed (Note [Streaming stores]): the head swap of [64,12,128,64] floats took 2.2-2.6 ms
// at one thread with normal stores, 1.3-1.5 streamed.
constexpr int64_t kRows = 16, kShortRowBytes = 2048;

/// Whether p copies rows shorter than kShortRowBytes, contiguous in both tensors (the caller
/// checks that both have one dtype).
bool copies_short_rows(const ElementwisePlan& p) {
  if (p.ndim < 2) return false;
  const int inner = p.ndim - 1;
  return p.strides[0][inner] == 1 && p.strides[1][inner] == 1 &&
         p.sizes[inner] * itemsize(p.dtypes[0]) < kShortRowBytes;
}

template <class T>
void copy_short_rows(const ElementwisePlan& p) {
  const int outer = p.ndim - 1;  // dims [0, outer) index the rows
  const int64_t len = p.sizes[outer], rows = p.numel / len;
  const int64_t bytes = len * int64_t(sizeof(T));
  const bool stream = use_streaming_stores<T>(p.numel);
  detail::parallel_for(
      0, rows, std::max<int64_t>(1, kElementwiseGrain / len), [&](int64_t r0, int64_t r1) {
        int64_t idx[kMaxPlanDims];
        for (int64_t rem = r0, d = outer - 1; d >= 0; --d)
          idx[d] = rem % p.sizes[d], rem /= p.sizes[d];
        T* dst[kRows];
        const T* src[kRows];
        for (int64_t r = r0; r < r1;) {
          const int64_t n = std::min(kRows, r1 - r);
          for (int64_t k = 0; k < n; ++k) {
            int64_t od = 0, os = 0;
            for (int d = 0; d < outer; ++d)
              od += idx[d] * p.strides[0][d], os += idx[d] * p.strides[1][d];
            dst[k] = reinterpret_cast<T*>(p.data[0]) + od;
            src[k] = reinterpret_cast<const T*>(p.data[1]) + os;
            const char* line = reinterpret_cast<const char*>(src[k]);
            for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(line + b);
            __builtin_prefetch(line + bytes - 1);
            for (int d = outer - 1; d >= 0 && ++idx[d] == p.sizes[d]; --d) idx[d] = 0;
          }
          for (int64_t k = 0; k < n; ++k) {
            const T* a = src[k];
            write_contiguous(dst[k], len, stream, [&](int64_t i) { return a[i]; });
          }
          r += n;
        }
        if (stream) store_fence();
      });
}

void copy_kernel(const ElementwisePlan& p) {
  visit_dtype(p.dtypes[0], [&]<class D>() {
    visit_dtype(p.dtypes[1], [&]<class S>() {
      if (is_transposing_copy(p)) return copy_transposed<D, S>(p);
      if constexpr (std::is_same_v<D, S>)
        if (copies_short_rows(p)) return copy_short_rows<D>(p);
      const bool stream = use_streaming_stores<D>(p.numel);
      cpu_for_each_streaming(p, stream, [&](char* const* d, const int64_t* s, int64_t n) {
        D* o = reinterpret_cast<D*>(d[0]);
        const S* a = reinterpret_cast<const S*>(d[1]);
        if constexpr (std::is_same_v<D, S>) {
          if (s[0] == 1 && s[1] == 1 && !stream) {
            std::memcpy(o, a, size_t(n) * sizeof(D));
            return;
          }
        }
        if (s[0] == 1 && s[1] == 1) {
          write_contiguous(o, n, stream, [&](int64_t i) { return convert<D>(a[i]); });
        } else if (s[0] == 1 && s[1] == 0) {
          // A broadcast source (e.g. the expanded gradient of sum or mean): convert once and
          // fill; the strided loop below does not vectorise and is ~5x slower.
          const D v = convert<D>(a[0]);
          write_contiguous(o, n, stream, [&](int64_t) { return v; });
        } else {
          for (int64_t i = 0; i < n; ++i) o[i * s[0]] = convert<D>(a[i * s[1]]);
        }
      });
    });
  });
}

void fill_kernel(const ElementwisePlan& p, const Scalar& value) {
  visit_dtype(p.dtypes[0], [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v = T(float(value.to_double()));
    else v = value.to<T>();
    cpu_for_each(p, [&](char* const* d, const int64_t* s, int64_t n) {
      T* o = reinterpret_cast<T*>(d[0]);
      if (s[0] == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = v;
      }
    });
  });
}

void where_kernel(const ElementwisePlan& p) {
  visit_dtype(p.dtypes[0], [&]<class T>() {
    cpu_for_each(p, [&](char* const* d, const int64_t* s, int64_t n) {
      T* o = reinterpret_cast<T*>(d[0]);
      const bool* c = reinterpret_cast<const bool*>(d[1]);
      const T* a = reinterpret_cast<const T*>(d[2]);
      const T* b = reinterpret_cast<const T*>(d[3]);
      // Contiguous runs (a or b may be a broadcast scalar, as in masked_fill and relu's
      // backward): both values are loaded unconditionally so the select has no branch and
      // vectorises; the general strided loop is branchy and mispredicts on random conditions.
      // The condition is read as bytes: GCC 12 does not vectorise a select on a bool load,
      // but does on uint8_t.
      const uint8_t* c8 = reinterpret_cast<const uint8_t*>(c);
      if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 0) {
        const T bv = b[0];
        for (int64_t i = 0; i < n; ++i) {
          const T av = a[i];
          o[i] = c8[i] != 0 ? av : bv;
        }
      } else if (s[0] == 1 && s[1] == 1 && s[2] == 0 && s[3] == 1) {
        // a the broadcast scalar: masked_fill (where(mask, value, x)).
        const T av = a[0];
        for (int64_t i = 0; i < n; ++i) {
          const T bv = b[i];
          o[i] = c8[i] != 0 ? av : bv;
        }
      } else if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
        for (int64_t i = 0; i < n; ++i) {
          const T av = a[i], bv = b[i];
          o[i] = c8[i] != 0 ? av : bv;
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = c[i * s[1]] ? a[i * s[2]] : b[i * s[3]];
      }
    });
  });
}

void range_kernel(const Tensor& out, double start, double step, std::optional<double> end) {
  const int64_t n = out.numel();
  visit_dtype(out.dtype(), [&]<class T>() {
    T* o = static_cast<T*>(out.data_ptr());
    if (!end) {
      for (int64_t i = 0; i < n; ++i) o[i] = convert<T>(start + double(i) * step);
      return;
    }
    // linspace: the first half counts up from start, the second down from end, so both
    // endpoints are exact (PyTorch's formula).
    if (n == 1) {
      o[0] = convert<T>(start);
      return;
    }
    const int64_t half = n / 2;
    for (int64_t i = 0; i < n; ++i)
      o[i] = convert<T>(i < half ? start + step * double(i) : *end - step * double(n - i - 1));
  });
}
}  // namespace

void register_copy_cpu() {
  detail::copy_kernel.set(DeviceType::CPU, &copy_kernel);
  detail::fill_kernel.set(DeviceType::CPU, &fill_kernel);
  detail::where_kernel.set(DeviceType::CPU, &where_kernel);
  detail::range_kernel.set(DeviceType::CPU, &range_kernel);
}

}  // namespace ignis::cpu
