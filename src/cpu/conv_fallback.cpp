// im2col convolution (see conv_fallback.h). For one image and one group, the column matrix
// cols[(c, kh, kw), (oh, ow)] holds the input value each kernel tap sees at each output
// position (0 in the padding); then
//   forward:          out_g        = W_g [O/g, K] @ cols [K, L]
//   backward input:   cols         = W_g^T @ grad_out_g, scattered back by col2im
//   backward weight:  grad_W_g    += grad_out_g [O/g, L] @ cols^T
// with K = C/g * kH * kW and L = Ho * Wo. Inputs of any layout are made NCHW-contiguous first
// and results copied into the caller's output, whatever its layout.
#include "cpu/conv_fallback.h"

#include "core/parallel.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"

namespace ignis::cpu {

namespace {

using detail::Conv2dParams;

/// Geometry of one image and group: channels c of a [C, H, W] plane stack seen through the
/// kernel, producing [Ho, Wo].
struct Geometry {
  int64_t c, h, w, kh, kw, ho, wo;
  const Conv2dParams* p;
  int64_t k() const { return c * kh * kw; }
  int64_t l() const { return ho * wo; }
  /// Calls f(col_row, col_index, input_index) for every in-bounds (tap, output position).
  template <class F>
  void for_each(const F& f) const {
    detail::parallel_for(0, c * kh * kw, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t ci = r / (kh * kw), i = (r / kw) % kh, j = r % kw;
        for (int64_t oh = 0; oh < ho; ++oh) {
          const int64_t y = oh * p->stride[0] - p->padding[0] + i * p->dilation[0];
          if (y < 0 || y >= h) continue;
          for (int64_t ow = 0; ow < wo; ++ow) {
            const int64_t x = ow * p->stride[1] - p->padding[1] + j * p->dilation[1];
            if (x >= 0 && x < w) f(r * ho * wo + oh * wo + ow, (ci * h + y) * w + x);
          }
        }
      }
    });
  }
};

template <class T>
void im2col(const Geometry& g, const T* in, T* cols) {
  std::fill(cols, cols + g.k() * g.l(), T(0));
  g.for_each([&](int64_t ci, int64_t ii) { cols[ci] = in[ii]; });
}

/// Accumulates cols into the input planes. Parallel over channels: the rows of one channel
/// write only that channel's plane.
template <class T>
void col2im(const Geometry& g, const T* cols, T* in) {
  detail::parallel_for(0, g.c, 1, [&](int64_t c0, int64_t c1) {
  for (int64_t ci = c0; ci < c1; ++ci) {
    T* plane = in + ci * g.h * g.w;
    const T* rows = cols + ci * g.kh * g.kw * g.l();
    // Serial over taps: different taps hit the same input element.
    for (int64_t r = 0; r < g.kh * g.kw; ++r) {
      const int64_t i = r / g.kw, j = r % g.kw;
      for (int64_t oh = 0; oh < g.ho; ++oh) {
        const int64_t y = oh * g.p->stride[0] - g.p->padding[0] + i * g.p->dilation[0];
        if (y < 0 || y >= g.h) continue;
        for (int64_t ow = 0; ow < g.wo; ++ow) {
          const int64_t x = ow * g.p->stride[1] - g.p->padding[1] + j * g.p->dilation[1];
          if (x >= 0 && x < g.w) plane[y * g.w + x] += rows[r * g.l() + oh * g.wo + ow];
        }
      }
    }
  }
  });
}

Geometry geometry(const Tensor& input, const Tensor& weight, const Tensor& output,
                  const Conv2dParams& p) {
  return {input.size(1) / p.groups, input.size(2), input.size(3), weight.size(2),
          weight.size(3), output.size(2), output.size(3), &p};
}

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

template <class T>
void forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& output,
             const Conv2dParams& p) {
  const Tensor x = input.contiguous();
  const Geometry g = geometry(x, weight, output, p);
  const int64_t n = x.size(0), og = weight.size(0) / p.groups;
  Tensor cols = detail::make_tensor({g.k(), g.l()}, x.dtype(), x.device());
  Tensor out = detail::make_tensor(output.sizes(), x.dtype(), x.device());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < p.groups; ++gi) {
      im2col(g, ptr<T>(x) + (b * p.groups + gi) * g.c * g.h * g.w, ptr<T>(cols));
      const Tensor w = weight.narrow(0, gi * og, og).reshape({og, g.k()});
      out.select(0, b).narrow(0, gi * og, og).copy_(matmul(w, cols).view({og, g.ho, g.wo}));
    }
  if (bias.defined()) out.add_(bias.view({1, -1, 1, 1}));
  Tensor(output).copy_(out);
}

template <class T>
void backward_input(const Tensor& grad_out, const Tensor& weight, const Tensor& grad_input,
                    const Conv2dParams& p) {
  const Tensor go = grad_out.contiguous();
  Tensor gi_t = detail::make_tensor(grad_input.sizes(), go.dtype(), go.device());
  gi_t.zero_();
  const Geometry g = geometry(gi_t, weight, go, p);
  const int64_t n = go.size(0), og = weight.size(0) / p.groups;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < p.groups; ++gi) {
      const Tensor w = weight.narrow(0, gi * og, og).reshape({og, g.k()});
      const Tensor gslice = go.select(0, b).narrow(0, gi * og, og).reshape({og, g.l()});
      const Tensor cols = matmul(w.t(), gslice).contiguous();
      col2im(g, ptr<T>(cols), ptr<T>(gi_t) + (b * p.groups + gi) * g.c * g.h * g.w);
    }
  Tensor(grad_input).copy_(gi_t);
}

template <class T>
void backward_weight(const Tensor& grad_out, const Tensor& input, const Tensor& grad_weight,
                     const Tensor& grad_bias, const Conv2dParams& p) {
  const Tensor x = input.contiguous(), go = grad_out.contiguous();
  const Geometry g = geometry(x, grad_weight, go, p);
  const int64_t n = x.size(0), og = grad_weight.size(0) / p.groups;
  Tensor cols = detail::make_tensor({g.k(), g.l()}, x.dtype(), x.device());
  Tensor gw = zeros(grad_weight.sizes(), x.dtype());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < p.groups; ++gi) {
      im2col(g, ptr<T>(x) + (b * p.groups + gi) * g.c * g.h * g.w, ptr<T>(cols));
      const Tensor gslice = go.select(0, b).narrow(0, gi * og, og).reshape({og, g.l()});
      Tensor dst = gw.narrow(0, gi * og, og).view({og, g.k()});
      dst.add_(matmul(gslice, cols.t()));
    }
  Tensor(grad_weight).copy_(gw);
  if (grad_bias.defined()) Tensor(grad_bias).copy_(sum(go, {0, 2, 3}));
}

}  // namespace

void conv2d_forward_fallback(const Tensor& input, const Tensor& weight, const Tensor& bias,
                             const Tensor& output, const Conv2dParams& p) {
  if (input.dtype() == kFloat64)
    forward<double>(input, weight, bias, output, p);
  else
    forward<float>(input, weight, bias, output, p);
}

void conv2d_backward_input_fallback(const Tensor& grad_out, const Tensor& weight,
                                    const Tensor& grad_input, const Conv2dParams& p) {
  if (grad_out.dtype() == kFloat64)
    backward_input<double>(grad_out, weight, grad_input, p);
  else
    backward_input<float>(grad_out, weight, grad_input, p);
}

void conv2d_backward_weight_fallback(const Tensor& grad_out, const Tensor& input,
                                     const Tensor& grad_weight, const Tensor& grad_bias,
                                     const Conv2dParams& p) {
  if (input.dtype() == kFloat64)
    backward_weight<double>(grad_out, input, grad_weight, grad_bias, p);
  else
    backward_weight<float>(grad_out, input, grad_weight, grad_bias, p);
}

}  // namespace ignis::cpu
