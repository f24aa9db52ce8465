// CPU kernels that move or make values without arithmetic: converting copy, fill, where,
// and the arange/linspace ranges.
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
// few KiB of stride, a different page. Such a copy goes in square tiles instead: a tile's
// kTile input rows are read whole into a small buffer (each input line fetched once, all of
// it used), then the tile's kTile output rows are written from the buffer (copy_transposed).
// The plan's two innermost dims are the pair (make_plan_memory_order puts the output's
// unit-stride dim last; the input's unit-stride dim must be the one before it).

/// Tile edge of a transposing copy: a row of 32 values is one to four cache lines, and the
/// buffer (32 x 32 values, at most 16 KiB) stays in L1.
constexpr int64_t kTile = 32;

/// Whether plan p is a transposing copy: its output's unit-stride dim is the innermost and
/// its input's the one outside it, both at least a tile long.
bool is_transposing_copy(const ElementwisePlan& p) {
  if (p.ndim < 2) return false;
  const int inner = p.ndim - 1, outer = p.ndim - 2;
  return p.strides[0][inner] == 1 && p.strides[1][outer] == 1 && p.strides[1][inner] != 1 &&
         p.sizes[inner] >= kTile && p.sizes[outer] >= kTile;
}

/// The copy of is_transposing_copy's plans (Note [Transposing copies]): work items are a
/// band of kTile rows of one [A, B] slice (A the outer of the two dims, B the inner), each
/// copied tile by tile.
template <class D, class S>
void copy_transposed(const ElementwisePlan& p) {
  const int ib = p.ndim - 1, ia = p.ndim - 2;
  const int64_t A = p.sizes[ia], B = p.sizes[ib];
  const int64_t out_a = p.strides[0][ia], in_b = p.strides[1][ib];
  const int64_t slices = p.numel / (A * B), bands = (A + kTile - 1) / kTile;
  D* const out = reinterpret_cast<D*>(p.data[0]);
  const S* const in = reinterpret_cast<const S*>(p.data[1]);
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / (kTile * B));
  detail::parallel_for(0, slices * bands, grain, [&](int64_t w0, int64_t w1) {
    S tile[kTile][kTile];
    for (int64_t w = w0; w < w1; ++w) {
      // The slice's offsets from its index over the dims outside the pair.
      int64_t rest = w / bands, off_out = 0, off_in = 0;
      for (int d = ia - 1; d >= 0; --d) {
        const int64_t i = rest % p.sizes[d];
        rest /= p.sizes[d];
        off_out += i * p.strides[0][d];
        off_in += i * p.strides[1][d];
      }
      const int64_t a0 = (w % bands) * kTile, na = std::min(kTile, A - a0);
      for (int64_t b0 = 0; b0 < B; b0 += kTile) {
        const int64_t nb = std::min(kTile, B - b0);
        // The tile's input rows read whole into a buffer first: read in place, the kTile lines
        // a tile spans lie a multiple of 4 KiB apart whenever the stride is, so they share one
        // L1 set and evict each other before the next output row comes back for them.
        for (int64_t b = 0; b < nb; ++b) {
          const S* i = in + off_in + (b0 + b) * in_b + a0;
          for (int64_t a = 0; a < na; ++a) tile[b][a] = i[a];
        }
        for (int64_t a = 0; a < na; ++a) {
          D* o = out + off_out + (a0 + a) * out_a + b0;
          for (int64_t b = 0; b < nb; ++b) o[b] = convert<D>(tile[b][a]);
        }
      }
    }
  });
}

void copy_kernel(const ElementwisePlan& p) {
  visit_dtype(p.dtypes[0], [&]<class D>() {
    visit_dtype(p.dtypes[1], [&]<class S>() {
      if (is_transposing_copy(p)) return copy_transposed<D, S>(p);
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
