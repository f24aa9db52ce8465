// CPU kernels of 2-D resampling (src/ops/nn_kernels.h, ResampleParams): padding (constant,
// reflect, replicate) and nearest / bilinear interpolation read each output pixel from one or
// two source rows and columns, forward and backward, plus register_resample_cpu().
// Tensors are 4-D [N, C, H, W] in any layout. With the channels contiguous (channels-last)
// the loops go pixel by pixel over rows of C values; otherwise plane by plane. The backward
// runs in parallel over images or planes, so each gradient element is added to by one
// thread only.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "cpu/loops.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::cpu {

namespace {

using detail::ResampleParams;

/// One axis's taps in the element type: source offsets (index times the tensor's stride;
/// -1 where the output takes the fill value, as index -1 in ResampleAxis) and the two weights.
template <class T>
struct Taps {
  std::vector<int64_t> off0, off1;
  std::vector<T> a, b;  // weights of off0 and off1 (bilinear)
  bool fills(int64_t i) const { return off0[size_t(i)] < 0; }
};

template <class T>
Taps<T> taps_of(const detail::ResampleAxis& axis, int64_t stride, bool bilinear) {
  const size_t n = axis.i0.size();
  Taps<T> t;
  t.off0.resize(n);
  if (bilinear) t.off1.resize(n), t.a.resize(n), t.b.resize(n);
  for (size_t i = 0; i < n; ++i) {
    t.off0[i] = axis.i0[i] < 0 ? -1 : axis.i0[i] * stride;
    if (bilinear) {
      t.off1[i] = axis.i1[i] * stride;
      t.b[i] = T(axis.w1[i]);
      t.a[i] = T(1) - t.b[i];
    }
  }
  return t;
}

template <class T>
void forward(const Tensor& in, const Tensor& out, const ResampleParams& p) {
  const int64_t N = out.size(0), C = out.size(1), Ho = out.size(2), Wo = out.size(3);
  const Shape &si = in.strides(), &so = out.strides();
  const Taps<T> th = taps_of<T>(p.h, si[2], p.bilinear), tw = taps_of<T>(p.w, si[3], p.bilinear);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const T fill = T(p.fill);
  if (detail::channels_inner(in, out)) {
    // Pixel by pixel: each output pixel's C values from one or four source pixels.
    detail::parallel_for(
        0,
        N * Ho * Wo,
        std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, C)),
        [&](int64_t q0, int64_t q1) {
          for (int64_t q = q0; q < q1; ++q) {
            const int64_t n = q / (Ho * Wo), oh = q / Wo % Ho, ow = q % Wo;
            T* o = y + n * so[0] + oh * so[2] + ow * so[3];
            if (th.fills(oh) || tw.fills(ow)) {
              std::fill_n(o, C, fill);
              continue;
            }
            const T* xn = x + n * si[0];
            const T* r00 = xn + th.off0[size_t(oh)] + tw.off0[size_t(ow)];
            if (!p.bilinear) {
              std::copy_n(r00, C, o);
              continue;
            }
            const T* r01 = xn + th.off0[size_t(oh)] + tw.off1[size_t(ow)];
            const T* r10 = xn + th.off1[size_t(oh)] + tw.off0[size_t(ow)];
            const T* r11 = xn + th.off1[size_t(oh)] + tw.off1[size_t(ow)];
            const T ha = th.a[size_t(oh)], hb = th.b[size_t(oh)];
            const T wa = tw.a[size_t(ow)], wb = tw.b[size_t(ow)];
            for (int64_t c = 0; c < C; ++c)
              o[c] = ha * (wa * r00[c] + wb * r01[c]) + hb * (wa * r10[c] + wb * r11[c]);
          }
        });
    return;
  }
  // Plane by plane, row by row.
  detail::parallel_for(
      0,
      N * C,
      std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, Ho * Wo)),
      [&](int64_t p0, int64_t p1) {
        for (int64_t pl = p0; pl < p1; ++pl) {
          const int64_t n = pl / C, c = pl % C;
          const T* xp = x + n * si[0] + c * si[1];
          T* yp = y + n * so[0] + c * so[1];
          for (int64_t oh = 0; oh < Ho; ++oh) {
            T* yr = yp + oh * so[2];
            if (th.fills(oh)) {
              for (int64_t ow = 0; ow < Wo; ++ow) yr[ow * so[3]] = fill;
              continue;
            }
            const T* r0 = xp + th.off0[size_t(oh)];
            if (!p.bilinear) {
              for (int64_t ow = 0; ow < Wo; ++ow)
                yr[ow * so[3]] = tw.fills(ow) ? fill : r0[tw.off0[size_t(ow)]];
              continue;
            }
            const T* r1 = xp + th.off1[size_t(oh)];
            const T ha = th.a[size_t(oh)], hb = th.b[size_t(oh)];
            for (int64_t ow = 0; ow < Wo; ++ow) {
              const int64_t w0 = tw.off0[size_t(ow)], w1 = tw.off1[size_t(ow)];
              const T wa = tw.a[size_t(ow)], wb = tw.b[size_t(ow)];
              yr[ow * so[3]] = ha * (wa * r0[w0] + wb * r0[w1]) + hb * (wa * r1[w0] + wb * r1[w1]);
            }
          }
        }
      });
}

template <class T>
void backward(const Tensor& go, const Tensor& gi, const ResampleParams& p) {
  const int64_t N = gi.size(0), C = gi.size(1), H = gi.size(2), W = gi.size(3);
  const int64_t Ho = go.size(2), Wo = go.size(3);
  const Shape &sg = go.strides(), &sd = gi.strides();
  const Taps<T> th = taps_of<T>(p.h, sd[2], p.bilinear), tw = taps_of<T>(p.w, sd[3], p.bilinear);
  const T* g = static_cast<const T*>(go.data_ptr());
  T* d = static_cast<T*>(gi.data_ptr());
  if (detail::channels_inner(gi, go)) {
    // Image by image: zero its gradient, then add every output pixel's row of C values.
    detail::parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        T* dn = d + n * sd[0];
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) std::fill_n(dn + h * sd[2] + w * sd[3], C, T(0));
        for (int64_t oh = 0; oh < Ho; ++oh) {
          if (th.fills(oh)) continue;
          for (int64_t ow = 0; ow < Wo; ++ow) {
            if (tw.fills(ow)) continue;
            const T* gr = g + n * sg[0] + oh * sg[2] + ow * sg[3];
            T* r00 = dn + th.off0[size_t(oh)] + tw.off0[size_t(ow)];
            if (!p.bilinear) {
              for (int64_t c = 0; c < C; ++c) r00[c] += gr[c];
              continue;
            }
            T* r01 = dn + th.off0[size_t(oh)] + tw.off1[size_t(ow)];
            T* r10 = dn + th.off1[size_t(oh)] + tw.off0[size_t(ow)];
            T* r11 = dn + th.off1[size_t(oh)] + tw.off1[size_t(ow)];
            const T ha = th.a[size_t(oh)], hb = th.b[size_t(oh)];
            const T wa = tw.a[size_t(ow)], wb = tw.b[size_t(ow)];
            const T w00 = ha * wa, w01 = ha * wb, w10 = hb * wa, w11 = hb * wb;
            // One tap after another: two taps may be the same pixel (at the last row or
            // column), so the adds must not be fused into one read-modify-write per channel.
            for (int64_t c = 0; c < C; ++c) r00[c] += w00 * gr[c];
            for (int64_t c = 0; c < C; ++c) r01[c] += w01 * gr[c];
            for (int64_t c = 0; c < C; ++c) r10[c] += w10 * gr[c];
            for (int64_t c = 0; c < C; ++c) r11[c] += w11 * gr[c];
          }
        }
      }
    });
    return;
  }
  detail::parallel_for(
      0,
      N * C,
      std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, Ho * Wo)),
      [&](int64_t p0, int64_t p1) {
        for (int64_t pl = p0; pl < p1; ++pl) {
          const int64_t n = pl / C, c = pl % C;
          T* dp = d + n * sd[0] + c * sd[1];
          const T* gp = g + n * sg[0] + c * sg[1];
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) dp[h * sd[2] + w * sd[3]] = T(0);
          for (int64_t oh = 0; oh < Ho; ++oh) {
            if (th.fills(oh)) continue;
            const T* gr = gp + oh * sg[2];
            T* r0 = dp + th.off0[size_t(oh)];
            if (!p.bilinear) {
              for (int64_t ow = 0; ow < Wo; ++ow)
                if (!tw.fills(ow)) r0[tw.off0[size_t(ow)]] += gr[ow * sg[3]];
              continue;
            }
            T* r1 = dp + th.off1[size_t(oh)];
            const T ha = th.a[size_t(oh)], hb = th.b[size_t(oh)];
            for (int64_t ow = 0; ow < Wo; ++ow) {
              const int64_t w0 = tw.off0[size_t(ow)], w1 = tw.off1[size_t(ow)];
              const T wa = tw.a[size_t(ow)], wb = tw.b[size_t(ow)];
              const T v = gr[ow * sg[3]];
              r0[w0] += ha * wa * v;
              r0[w1] += ha * wb * v;
              r1[w0] += hb * wa * v;
              r1[w1] += hb * wb * v;
            }
          }
        }
      });
}

}  // namespace

void register_resample_cpu() {
  detail::resample2d_forward_kernel.set(
      DeviceType::CPU, [](const Tensor& in, const Tensor& out, const ResampleParams& p) {
        visit_float_or_double(in.dtype(), [&]<class T>() { forward<T>(in, out, p); });
      });
  detail::resample2d_backward_kernel.set(
      DeviceType::CPU, [](const Tensor& go, const Tensor& gi, const ResampleParams& p) {
        visit_float_or_double(go.dtype(), [&]<class T>() { backward<T>(go, gi, p); });
      });
}

}  // namespace ignis::cpu
