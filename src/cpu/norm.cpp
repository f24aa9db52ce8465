// CPU kernels of the normalisation family — batch norm (NCHW and channels-last paths) and the
// row norms (layer norm, group norm) — plus register_nn_cpu(), the family's one entry point
// called from register.cpp. Own loops: statistics accumulate in double (two passes: mean,
// then squared deviations, which avoids the cancellation of E[x^2] - E[x]^2) and the
// normalisation is one fused multiply-add per element.
#include <cmath>
#include <vector>

#include "cpu/loops.h"
#include "kernels/row_norm_math.h"
#include "core/parallel.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::cpu {

void register_pool_cpu();  // pool.cpp
#ifdef IGNIS_WITH_DNNL
void register_conv_cpu();  // dnnl_conv.cpp
#endif

namespace {

using detail::BatchNormArgs;
using detail::BatchNormBackwardArgs;
using detail::RowNormArgs;
using detail::RowNormBackwardArgs;

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

/// parallel_for over [0, n) that also tells f its chunk number (< chunks_for(n, grain)), so
/// each chunk can own a slice of a partial-sum buffer allocated before the parallel region.
int64_t chunks_for(int64_t n, int64_t grain) { return detail::num_threads_for(n, grain); }
template <class F>
void parallel_chunks(int64_t n, int64_t grain, const F& f) {
  const int64_t nt = chunks_for(n, grain);
  const int64_t chunk = (n + nt - 1) / std::max<int64_t>(nt, 1);
  detail::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { f(b / chunk, b, e); });
}

/// Sums over chunks: acc[k][j] for k < chunks, into out[j].
void reduce_chunks(const std::vector<double>& acc, int64_t chunks, int64_t width, double* out) {
  for (int64_t j = 0; j < width; ++j) out[j] = 0;
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t j = 0; j < width; ++j) out[j] += acc[size_t(k * width + j)];
}

// ---- batch norm ----------------------------------------------------------------------------
// NCHW: x[n, c, s] at n*C*S + c*S + s (a channel is N runs of S contiguous values).
// Channels-last: x[n, c, s] at (n*S + s)*C + c (rows of C contiguous values).

/// Per-channel sum over (n, s) of f(x, channel), in double.
template <class T, class F>
void channel_sums(const T* x, int64_t N, int64_t C, int64_t S, bool cl, const F& f, double* out) {
  if (!cl) {
    detail::parallel_for(0, C, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* r = x + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i) s += f(double(r[i]), c, (n * C + c) * S + i);
        }
        out[c] = s;
      }
    });
    return;
  }
  const int64_t rows = N * S, grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(C, 1));
  const int64_t chunks = chunks_for(rows, grain);
  std::vector<double> acc(size_t(chunks * C), 0.0);
  parallel_chunks(rows, grain, [&](int64_t k, int64_t r0, int64_t r1) {
    double* a = acc.data() + k * C;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < C; ++c) a[c] += f(double(x[r * C + c]), c, r * C + c);
  });
  reduce_chunks(acc, chunks, C, out);
}

/// y[i] = g(x[i], channel, i) for every element.
template <class T, class G>
void channel_map(int64_t N, int64_t C, int64_t S, bool cl, const G& g) {
  if (!cl) {
    detail::parallel_for(0, N * C, std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(S, 1)),
                         [&](int64_t p0, int64_t p1) {
                           for (int64_t p = p0; p < p1; ++p)
                             for (int64_t i = 0; i < S; ++i) g(p % C, p * S + i);
                         });
    return;
  }
  detail::parallel_for(0, N * S, std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(C, 1)),
                       [&](int64_t r0, int64_t r1) {
                         for (int64_t r = r0; r < r1; ++r)
                           for (int64_t c = 0; c < C; ++c) g(c, r * C + c);
                       });
}

template <class T>
void batch_norm_forward(const BatchNormArgs& a) {
  const int64_t N = a.n, C = a.c, S = a.s;
  const bool cl = detail::is_channels_last(a.input);
  const T* x = ptr<T>(a.input);
  T* mean = ptr<T>(a.save_mean);
  T* invstd = ptr<T>(a.save_invstd);
  std::vector<double> m(static_cast<size_t>(C)), v(static_cast<size_t>(C));
  if (a.training) {
    const double count = double(N * S);
    channel_sums(x, N, C, S, cl, [](double xv, int64_t, int64_t) { return xv; }, m.data());
    for (auto& e : m) e /= count;
    channel_sums(x, N, C, S, cl,
                 [&](double xv, int64_t c, int64_t) { return (xv - m[c]) * (xv - m[c]); },
                 v.data());
    T* rm = ptr<T>(a.running_mean);
    T* rv = ptr<T>(a.running_var);
    for (int64_t c = 0; c < C; ++c) {
      const double var = v[c] / count;
      mean[c] = T(m[c]);
      invstd[c] = T(1.0 / std::sqrt(var + a.eps));
      if (rm) rm[c] = T((1 - a.momentum) * double(rm[c]) + a.momentum * m[c]);
      // The running variance is the unbiased one (count >= 2 was checked).
      if (rv) rv[c] = T((1 - a.momentum) * double(rv[c]) + a.momentum * v[c] / (count - 1));
    }
  }
  std::vector<T> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
  const T* w = ptr<T>(a.weight);
  const T* b = ptr<T>(a.bias);
  for (int64_t c = 0; c < C; ++c) {
    const double sc = double(invstd[c]) * (w ? double(w[c]) : 1.0);
    scale[c] = T(sc);
    shift[c] = T((b ? double(b[c]) : 0.0) - double(mean[c]) * sc);
  }
  T* y = ptr<T>(a.output);
  channel_map<T>(N, C, S, cl, [&](int64_t c, int64_t i) { y[i] = x[i] * scale[c] + shift[c]; });
}

template <class T>
void batch_norm_backward(const BatchNormBackwardArgs& a) {
  const int64_t N = a.n, C = a.c, S = a.s;
  const bool cl = detail::is_channels_last(a.input);
  const T *x = ptr<T>(a.input), *g = ptr<T>(a.grad_out), *w = ptr<T>(a.weight);
  const T *mean = ptr<T>(a.save_mean), *invstd = ptr<T>(a.save_invstd);
  std::vector<double> sg(static_cast<size_t>(C)), sgx(static_cast<size_t>(C));
  channel_sums(g, N, C, S, cl, [](double gv, int64_t, int64_t) { return gv; }, sg.data());
  channel_sums(x, N, C, S, cl,
               [&](double xv, int64_t c, int64_t i) {
                 return double(g[i]) * (xv - double(mean[c])) * double(invstd[c]);
               },
               sgx.data());
  T *gw = ptr<T>(a.grad_weight), *gb = ptr<T>(a.grad_bias);
  for (int64_t c = 0; c < C; ++c) gw[c] = T(sgx[c]), gb[c] = T(sg[c]);
  // grad_input = w * invstd * (g - mean(g) - xhat * mean(g * xhat)) in training; the batch
  // statistics terms vanish in eval mode, where they were constants.
  const double count = double(N * S), keep = a.training ? 1.0 : 0.0;
  std::vector<double> k(static_cast<size_t>(C)), mg(static_cast<size_t>(C)), mgx(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    k[c] = double(invstd[c]) * (w ? double(w[c]) : 1.0);
    mg[c] = keep * sg[c] / count;
    mgx[c] = keep * sgx[c] / count;
  }
  T* gi = ptr<T>(a.grad_input);
  channel_map<T>(N, C, S, cl, [&](int64_t c, int64_t i) {
    const double xhat = (double(x[i]) - double(mean[c])) * double(invstd[c]);
    gi[i] = T(k[c] * (double(g[i]) - mg[c] - xhat * mgx[c]));
  });
}

// ---- layer norm and group norm ------------------------------------------------------------

using kernels::AffineIndex;

template <class T>
void row_norm_forward(const RowNormArgs& a) {
  const AffineIndex ai{a.groups, a.channels_per_group, a.s};
  const T *x = ptr<T>(a.input), *w = ptr<T>(a.weight), *b = ptr<T>(a.bias);
  T *y = ptr<T>(a.output), *mean = ptr<T>(a.mean), *invstd = ptr<T>(a.invstd);
  const int64_t cols = a.cols;
  detail::parallel_for(0, a.rows, std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(cols, 1)),
                       [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * cols;
      double m = 0, v = 0;
      for (int64_t j = 0; j < cols; ++j) m += double(xr[j]);
      m /= double(cols);
      for (int64_t j = 0; j < cols; ++j) v += (double(xr[j]) - m) * (double(xr[j]) - m);
      const double is = 1.0 / std::sqrt(v / double(cols) + a.eps);
      mean[r] = T(m), invstd[r] = T(is);
      T* yr = y + r * cols;
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t k = ai(r, j);
        yr[j] = T(kernels::row_norm_value(double(xr[j]), m, is, w ? double(w[k]) : 1.0,
                                          b ? double(b[k]) : 0.0));
      }
    }
  });
}

template <class T>
void row_norm_backward(const RowNormBackwardArgs& a) {
  const AffineIndex ai{a.groups, a.channels_per_group, a.s};
  const T *x = ptr<T>(a.input), *g = ptr<T>(a.grad_out), *w = ptr<T>(a.weight);
  const T *mean = ptr<T>(a.mean), *invstd = ptr<T>(a.invstd);
  T* gi = ptr<T>(a.grad_input);
  const int64_t cols = a.cols, width = ai.size(cols);
  const bool affine = a.grad_weight.defined();
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(cols, 1));
  const int64_t chunks = chunks_for(a.rows, grain);
  // Per chunk: partial sums of grad_weight (first width) and grad_bias (next width).
  std::vector<double> acc(affine ? size_t(chunks * 2 * width) : 0, 0.0);
  parallel_chunks(a.rows, grain, [&](int64_t ck, int64_t r0, int64_t r1) {
    double* pw = affine ? acc.data() + ck * 2 * width : nullptr;
    for (int64_t r = r0; r < r1; ++r) {
      const T *xr = x + r * cols, *gr = g + r * cols;
      const double m = double(mean[r]), is = double(invstd[r]);
      double sg = 0, sgx = 0;  // sums of gx = g * w and gx * xhat over the row
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t k = ai(r, j);
        const double xh = (double(xr[j]) - m) * is, gv = double(gr[j]);
        const double gx = gv * (w ? double(w[k]) : 1.0);
        sg += gx, sgx += gx * xh;
        if (pw) pw[k] += gv * xh, pw[width + k] += gv;
      }
      sg /= double(cols), sgx /= double(cols);
      T* gir = gi + r * cols;
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t k = ai(r, j);
        gir[j] = T(kernels::row_norm_grad(double(xr[j]), double(gr[j]), w ? double(w[k]) : 1.0, m,
                                          is, sg, sgx));
      }
    }
  });
  if (!affine) return;
  std::vector<double> tot(static_cast<size_t>(2 * width));
  reduce_chunks(acc, chunks, 2 * width, tot.data());
  T *gw = ptr<T>(a.grad_weight), *gb = ptr<T>(a.grad_bias);
  for (int64_t k = 0; k < width; ++k) gw[k] = T(tot[k]), gb[k] = T(tot[width + k]);
}


}  // namespace

void register_nn_cpu() {
  using namespace detail;
  batch_norm_forward_kernel.set(DeviceType::CPU, [](const BatchNormArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { batch_norm_forward<T>(a); });
  });
  batch_norm_backward_kernel.set(DeviceType::CPU, [](const BatchNormBackwardArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { batch_norm_backward<T>(a); });
  });
  row_norm_forward_kernel.set(DeviceType::CPU, [](const RowNormArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { row_norm_forward<T>(a); });
  });
  row_norm_backward_kernel.set(DeviceType::CPU, [](const RowNormBackwardArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { row_norm_backward<T>(a); });
  });
  register_pool_cpu();
#ifdef IGNIS_WITH_DNNL
  register_conv_cpu();
#endif
}

}  // namespace ignis::cpu
