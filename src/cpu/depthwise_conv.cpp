// Direct depthwise convolution kernels (Note [Direct depthwise convolutions],
// src/cpu/depthwise_conv.h).
#include "cpu/depthwise_conv.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/unary_ops.h"  // Relu

namespace ignis::cpu {

using detail::Conv2dParams;

namespace {

/// One call's sizes: input [N, C, H, W], output [N, C, Ho, Wo], window kH x kW.
struct Geometry {
  int64_t N, C, H, W, Ho, Wo, KH, KW;
  int64_t sh, sw, pt, pl, dh, dw;
  int64_t Hp, Wp;  // the zero-padded plane's rows and columns that some output reads

  int64_t taps() const { return KH * KW; }
};

Geometry geometry_of(const Tensor& in, const Tensor& w, const Tensor& out, const Conv2dParams& p) {
  Geometry g{};
  g.N = in.size(0), g.C = in.size(1), g.H = in.size(2), g.W = in.size(3);
  g.Ho = out.size(2), g.Wo = out.size(3), g.KH = w.size(2), g.KW = w.size(3);
  g.sh = p.stride[0], g.sw = p.stride[1], g.pt = p.padding[0], g.pl = p.padding[1];
  g.dh = p.dilation[0], g.dw = p.dilation[1];
  g.Hp = (g.Ho - 1) * g.sh + (g.KH - 1) * g.dh + 1;
  g.Wp = (g.Wo - 1) * g.sw + (g.KW - 1) * g.dw + 1;
  return g;
}

/// Planes (or rows of pixels) per parallel chunk: about 64K multiply-adds each.
int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(work_per_item, 1));
}

// ---- NCHW: a plane at a time ------------------------------------------------------------

/// 32 bytes of T (GCC/Clang vector extension: AVX2 registers on the default x86-64-v3 build).
template <class T>
struct VecOf {
  typedef T type __attribute__((vector_size(32)));
};
template <class T>
using Vec = typename VecOf<T>::type;
template <class T>
constexpr int64_t kLanes = 32 / sizeof(T);
template <class T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void store(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof v);
}
template <class T>
inline T lane_sum(Vec<T> v) {
  T r = 0;
  for (int64_t j = 0; j < kLanes<T>; ++j) r += v[j];
  return r;
}

/// The zero-padded plane, its columns split by phase so that every tap reads a contiguous run
/// whatever the stride: padded column q of row r lies at [r][q % sw][q / sw]. Output column
/// ow of tap (kh, kw) then reads row oh * sh + kh * dh, phase (kw * dw) % sw, index
/// ow + (kw * dw) / sw: `row_offset(oh) + tap_offset[k] + ow`.
struct PaddedPlane {
  int64_t phase_len, row_len;
  std::vector<int64_t> tap_offset;

  explicit PaddedPlane(const Geometry& g)
      : phase_len((g.Wp + g.sw - 1) / g.sw), row_len(g.sw * phase_len) {
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw)
        tap_offset.push_back(
            kh * g.dh * row_len + (kw * g.dw) % g.sw * phase_len + (kw * g.dw) / g.sw);
  }
  int64_t size(const Geometry& g) const { return g.Hp * row_len; }

  /// P = the input plane shifted by the padding, zero outside it.
  template <class T>
  void fill(T* P, const T* plane, const Geometry& g) const {
    std::fill(P, P + size(g), T(0));
    for_each_row(
        g,
        [&](T* row, const T* src, int64_t q0, int64_t q1) {
          if (g.sw == 1) {
            std::copy(src + q0, src + q1, row + q0);
            return;
          }
          for_each_phase(g, q0, q1, [&](int64_t ph, int64_t j0, int64_t j1) {
            for (int64_t j = j0; j < j1; ++j) row[ph * phase_len + j] = src[j * g.sw + ph];
          });
        },
        P,
        plane);
  }

  /// The inverse of fill: plane = P's values at the input's pixels.
  template <class T>
  void unfill(const T* P, T* plane, const Geometry& g) const {
    std::fill(plane, plane + g.H * g.W, T(0));
    for_each_row(
        g,
        [&](const T* row, T* dst, int64_t q0, int64_t q1) {
          if (g.sw == 1) {
            std::copy(row + q0, row + q1, dst + q0);
            return;
          }
          for_each_phase(g, q0, q1, [&](int64_t ph, int64_t j0, int64_t j1) {
            for (int64_t j = j0; j < j1; ++j) dst[j * g.sw + ph] = row[ph * phase_len + j];
          });
        },
        P,
        plane);
  }

 private:
  /// f(padded row, the plane's row shifted to padded columns, first and end padded column)
  /// for each padded row that holds input pixels: columns [q0, q1) of it do.
  template <class F, class PT, class QT>
  void for_each_row(const Geometry& g, const F& f, PT* P, QT* plane) const {
    const int64_t q0 = std::min(g.pl, g.Wp), q1 = std::min(g.Wp, g.pl + g.W);
    if (q1 <= q0) return;
    for (int64_t r = g.pt; r < std::min(g.Hp, g.pt + g.H); ++r)
      f(P + r * row_len, plane + (r - g.pt) * g.W - g.pl, q0, q1);
  }
  /// f(phase, j0, j1): padded columns q = j * sw + phase in [q0, q1) are those of j in [j0, j1).
  template <class F>
  static void for_each_phase(const Geometry& g, int64_t q0, int64_t q1, const F& f) {
    for (int64_t ph = 0; ph < g.sw; ++ph)
      f(ph, (q0 - ph + g.sw - 1) / g.sw, (q1 - ph + g.sw - 1) / g.sw);
  }
};

/// out[ow] = b + sum over taps k of w[k] * src[offset[k] + ow], then ReLU if asked; the
/// output columns kLanes at a time in registers across the taps. KT: the number of taps
/// when known at compile time (the loops unroll), else 0.
template <class T, int KT>
void forward_row(
    T* out,
    const T* src,
    const int64_t* offset,
    int64_t taps_rt,
    const T* w,
    const Vec<T>* wv,
    T b,
    int64_t Wo,
    bool relu) {
  const int64_t taps = KT ? KT : taps_rt;
  constexpr int64_t L = kLanes<T>;
  // With KT known, the offsets and weights in locals (registers): the stores to `out` could
  // alias the arrays, which would have them reloaded for every block.
  int64_t local_offset[KT ? KT : 1];
  Vec<T> local_wv[KT ? KT : 1];
  if constexpr (KT > 0) {
    std::copy(offset, offset + KT, local_offset);
    std::copy(wv, wv + KT, local_wv);
    offset = local_offset, wv = local_wv;
  }
  int64_t ow = 0;
  for (; ow + L <= Wo; ow += L) {
    Vec<T> acc = b + Vec<T>{};
    for (int64_t k = 0; k < taps; ++k) acc += wv[k] * load(src + offset[k] + ow);
    store(out + ow, acc);
  }
  for (; ow < Wo; ++ow) {
    T acc = b;
    for (int64_t k = 0; k < taps; ++k) acc += w[k] * src[offset[k] + ow];
    out[ow] = acc;
  }
  if (relu)
    for (int64_t i = 0; i < Wo; ++i) out[i] = kernels::Relu{}(out[i]);
}

/// The convolution of every plane: w holds each channel's taps in (kh, kw) order.
template <class T, int KT>
void forward_planes(const T* in, const T* w, const T* bias, T* out, const Geometry& g, bool relu) {
  const PaddedPlane pp(g);
  const int64_t plane_in = g.H * g.W, plane_out = g.Ho * g.Wo, taps = g.taps();
  detail::parallel_for(0, g.N * g.C, grain_for(plane_out * taps), [&](int64_t p0, int64_t p1) {
    std::vector<T> padded(static_cast<size_t>(pp.size(g)));
    std::vector<Vec<T>> wv(static_cast<size_t>(taps));
    for (int64_t pl = p0; pl < p1; ++pl) {
      const int64_t c = pl % g.C;
      const T* wc = w + c * taps;
      for (int64_t k = 0; k < taps; ++k) wv[size_t(k)] = wc[k] + Vec<T>{};
      pp.fill(padded.data(), in + pl * plane_in, g);
      for (int64_t oh = 0; oh < g.Ho; ++oh)
        forward_row<T, KT>(
            out + pl * plane_out + oh * g.Wo,
            padded.data() + oh * g.sh * pp.row_len,
            pp.tap_offset.data(),
            taps,
            wc,
            wv.data(),
            bias ? bias[c] : T(0),
            g.Wo,
            relu);
    }
  });
}

template <class T>
void forward_nchw(const T* in, const T* w, const T* bias, T* out, const Geometry& g, bool relu) {
  if (g.taps() == 9)
    forward_planes<T, 9>(in, w, bias, out, g, relu);
  else
    forward_planes<T, 0>(in, w, bias, out, g, relu);
}

/// The input gradient of a strided convolution (or one padded by more than its window
/// reaches): each output's share scattered over its window in a padded plane laid out as
/// fill's (each tap's run contiguous), which unfill then reads back.
template <class T>
void backward_input_scatter(const T* go, const T* w, T* gi, const Geometry& g) {
  const PaddedPlane pp(g);
  const int64_t plane_in = g.H * g.W, plane_out = g.Ho * g.Wo, taps = g.taps();
  detail::parallel_for(0, g.N * g.C, grain_for(plane_out * taps), [&](int64_t p0, int64_t p1) {
    std::vector<T> padded(static_cast<size_t>(pp.size(g)));
    for (int64_t pl = p0; pl < p1; ++pl) {
      const T* wc = w + (pl % g.C) * taps;
      std::fill(padded.begin(), padded.end(), T(0));
      for (int64_t oh = 0; oh < g.Ho; ++oh) {
        const T* __restrict gr = go + pl * plane_out + oh * g.Wo;
        T* base = padded.data() + oh * g.sh * pp.row_len;
        for (int64_t k = 0; k < taps; ++k) {
          T* __restrict q = base + pp.tap_offset[size_t(k)];
          const T a = wc[k];
          for (int64_t i = 0; i < g.Wo; ++i) q[i] += a * gr[i];
        }
      }
      pp.unfill(padded.data(), gi + pl * plane_in, g);
    }
  });
}

/// Stride 1: the input gradient is the output gradient convolved with the window turned
/// round, padded by the window's reach less the forward's padding, so it runs through the
/// forward's register-blocked rows.
template <class T>
void backward_input_nchw(const T* go, const T* w, T* gi, const Geometry& g) {
  const int64_t reach_h = (g.KH - 1) * g.dh, reach_w = (g.KW - 1) * g.dw;
  if (g.sh != 1 || g.sw != 1 || g.pt > reach_h || g.pl > reach_w)
    return backward_input_scatter(go, w, gi, g);
  Geometry a = g;
  a.H = g.Ho, a.W = g.Wo, a.Ho = g.H, a.Wo = g.W;
  a.pt = reach_h - g.pt, a.pl = reach_w - g.pl;
  a.Hp = a.Ho + reach_h, a.Wp = a.Wo + reach_w;
  const int64_t taps = g.taps();
  std::vector<T> turned(static_cast<size_t>(g.C * taps));
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t k = 0; k < taps; ++k) turned[size_t(c * taps + k)] = w[c * taps + taps - 1 - k];
  forward_nchw(go, turned.data(), static_cast<const T*>(nullptr), gi, a, false);
}

/// One plane's weight (and bias) gradient: for each kLanes output columns, the gradient is
/// loaded once and multiplied into every tap's accumulator (registers when KT is known).
/// Adds each tap's plane sum to total[k] (and the gradient's sum to total[taps]).
template <class T, int KT>
void weight_grad_plane(
    const T* gp,
    const T* P,
    const PaddedPlane& pp,
    const Geometry& g,
    bool with_bias,
    double* total) {
  const int64_t taps = KT ? KT : g.taps();
  constexpr int64_t L = kLanes<T>;
  constexpr int64_t kMax = KT ? KT : 1;
  std::vector<Vec<T>> acc_rt(KT ? 0 : size_t(taps));
  std::vector<T> tail_rt(KT ? 0 : size_t(taps));
  Vec<T> acc_ct[kMax] = {};
  T tail_ct[kMax] = {};
  Vec<T>* acc = KT ? acc_ct : acc_rt.data();
  T* tail = KT ? tail_ct : tail_rt.data();
  const int64_t* offset = pp.tap_offset.data();
  Vec<T> bacc{};
  T btail = 0;
  for (int64_t oh = 0; oh < g.Ho; ++oh) {
    const T* gr = gp + oh * g.Wo;
    const T* src = P + oh * g.sh * pp.row_len;
    int64_t ow = 0;
    for (; ow + L <= g.Wo; ow += L) {
      const Vec<T> gv = load(gr + ow);
      for (int64_t k = 0; k < taps; ++k) acc[k] += gv * load(src + offset[k] + ow);
      bacc += gv;
    }
    for (; ow < g.Wo; ++ow) {
      for (int64_t k = 0; k < taps; ++k) tail[k] += gr[ow] * src[offset[k] + ow];
      btail += gr[ow];
    }
  }
  for (int64_t k = 0; k < taps; ++k) total[k] += double(lane_sum<T>(acc[k]) + tail[k]);
  if (with_bias) total[taps] += double(lane_sum<T>(bacc) + btail);
}

/// Channels in parallel, each summing its planes in batch order: the same result on any
/// number of threads.
template <class T, int KT>
void backward_weight_planes(const T* go, const T* in, T* gw, T* gb, const Geometry& g) {
  const PaddedPlane pp(g);
  const int64_t plane_in = g.H * g.W, plane_out = g.Ho * g.Wo, taps = g.taps();
  detail::parallel_for(0, g.C, grain_for(g.N * plane_out * taps), [&](int64_t c0, int64_t c1) {
    std::vector<T> padded(static_cast<size_t>(pp.size(g)));
    std::vector<double> total(static_cast<size_t>(taps + 1));
    for (int64_t c = c0; c < c1; ++c) {
      std::fill(total.begin(), total.end(), 0.0);
      for (int64_t n = 0; n < g.N; ++n) {
        const int64_t pl = n * g.C + c;
        pp.fill(padded.data(), in + pl * plane_in, g);
        weight_grad_plane<T, KT>(
            go + pl * plane_out, padded.data(), pp, g, gb != nullptr, total.data());
      }
      for (int64_t k = 0; k < taps; ++k) gw[c * taps + k] = T(total[size_t(k)]);
      if (gb) gb[c] = T(total[size_t(taps)]);
    }
  });
}

template <class T>
void backward_weight_nchw(const T* go, const T* in, T* gw, T* gb, const Geometry& g) {
  if (g.taps() == 9)
    backward_weight_planes<T, 9>(go, in, gw, gb, g);
  else
    backward_weight_planes<T, 0>(go, in, gw, gb, g);
}

template <class T>
const T* data_of(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}
template <class T>
T* mutable_data_of(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

}  // namespace

bool depthwise_direct_fits(
    const Tensor& a, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  const DType t = a.dtype();
  if ((t != kFloat32 && t != kFloat64) || w.dtype() != t || b.dtype() != t) return false;
  if (a.dim() != 4 || w.dim() != 4 || b.dim() != 4) return false;
  const int64_t C = a.size(1);
  if (p.groups < 2 || p.groups != C || w.size(0) != C || w.size(1) != 1 || b.size(1) != C)
    return false;
  for (int i = 0; i < 2; ++i)
    if (p.padding[i] < 0 || p.padding_end[i] < 0 || p.stride[i] < 1 || p.dilation[i] < 1)
      return false;
  // A [C, 1, kH, kW] weight holds its values in the same order contiguous or channels-last.
  return (w.is_contiguous() || w.is_contiguous(MemoryFormat::channels_last)) && a.is_contiguous() &&
         b.is_contiguous();
}

void depthwise_forward(
    const Tensor& in,
    const Tensor& w,
    const Tensor& bias,
    const Tensor& out,
    const Conv2dParams& p,
    bool relu) {
  const Geometry g = geometry_of(in, w, out, p);
  auto run = [&]<class T>(T) {
    forward_nchw<T>(
        data_of<T>(in), data_of<T>(w), data_of<T>(bias), mutable_data_of<T>(out), g, relu);
  };
  in.dtype() == kFloat64 ? run(double()) : run(float());
}

void depthwise_backward_input(
    const Tensor& grad_out, const Tensor& w, const Tensor& grad_in, const Conv2dParams& p) {
  const Geometry g = geometry_of(grad_in, w, grad_out, p);
  auto run = [&]<class T>(T) {
    backward_input_nchw<T>(data_of<T>(grad_out), data_of<T>(w), mutable_data_of<T>(grad_in), g);
  };
  grad_in.dtype() == kFloat64 ? run(double()) : run(float());
}

void depthwise_backward_weight(
    const Tensor& grad_out,
    const Tensor& in,
    const Tensor& grad_w,
    const Tensor& grad_bias,
    const Conv2dParams& p) {
  const Geometry g = geometry_of(in, grad_w, grad_out, p);
  auto run = [&]<class T>(T) {
    backward_weight_nchw<T>(
        data_of<T>(grad_out),
        data_of<T>(in),
        mutable_data_of<T>(grad_w),
        mutable_data_of<T>(grad_bias),
        g);
  };
  in.dtype() == kFloat64 ? run(double()) : run(float());
}

}  // namespace ignis::cpu
