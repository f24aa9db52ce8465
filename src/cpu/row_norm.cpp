// CPU kernels of the row norms, layer norm and group norm: each row of a contiguous [rows, cols]
// view is normalised with its own mean and variance (summed in double, two passes), then
// scaled and shifted per column (layer norm) or per channel (group norm). The per-element
// formulas are src/kernels/row_norm_math.h, shared with the CUDA kernels.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "cpu/chunked_sums.h"
#include "cpu/loops.h"
#include "kernels/row_norm_math.h"
#include "ops/nn_kernels.h"

namespace ignis::cpu {
namespace {

using detail::RowNormArgs;
using detail::RowNormBackwardArgs;

using kernels::AffineIndex;

/// Double lanes per row sum.
constexpr int64_t kLanes = 8;

// A row is normalised with one mean and variance; its affine parameters are indexed by column
// (layer norm) or are one per channel's run of s columns (group norm). The loops below sum in
// kLanes double lanes (one serial chain of double adds runs at a few cycles a value) and take
// a group-norm row channel by channel, so no element pays AffineIndex's division.

/// The sums over j in [0, n) of the pair f(j) adds to (s0, s1), each in kLanes double lanes:
/// f(j, s0, s1) adds its terms of column j.
template <class F>
void lane_sums(int64_t n, double& out0, double& out1, const F& f) {
  double s0[kLanes] = {}, s1[kLanes] = {};
  const int64_t full = n / kLanes * kLanes;
  for (int64_t j = 0; j < full; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) f(j + l, s0[l], s1[l]);
  for (int64_t j = full; j < n; ++j) f(j, s0[j - full], s1[j - full]);
  for (int64_t l = 0; l < kLanes; ++l) out0 += s0[l], out1 += s1[l];
}

/// Calls f(j0, len, k) for the runs of row r's columns that share one affine parameter: for
/// layer norm the whole row with k = -1 (the parameter of column j is at j); for group norm
/// each channel's run of s columns with its channel k.
template <class F>
void affine_runs(const AffineIndex& ai, int64_t r, int64_t cols, const F& f) {
  if (ai.groups == 0) return f(int64_t(0), cols, int64_t(-1));
  const int64_t c0 = (r % ai.groups) * ai.cpg;
  for (int64_t c = 0; c < ai.cpg; ++c) f(c * ai.s, ai.s, c0 + c);
}

/// Layer norm's per-column parameter p, or its identity `fill` in every column when p is
/// absent (kept in `own`), so the column loops read an array either way.
template <class T>
const T* per_column(const T* p, int64_t cols, T fill, std::vector<T>& own) {
  if (p) return p;
  own.assign(size_t(cols), fill);
  return own.data();
}

template <class T>
void row_norm_forward(const RowNormArgs& a) {
  const AffineIndex ai{a.groups, a.channels_per_group, a.s};
  const T *x = data_or_null<T>(a.input), *w = data_or_null<T>(a.weight),
          *b = data_or_null<T>(a.bias);
  T *y = data_or_null<T>(a.output), *mean = data_or_null<T>(a.mean),
    *invstd = data_or_null<T>(a.invstd);
  const int64_t cols = a.cols;
  std::vector<T> ones, zeros;
  const T* wc = ai.groups == 0 ? per_column(w, cols, T(1), ones) : nullptr;
  const T* bc = ai.groups == 0 ? per_column(b, cols, T(0), zeros) : nullptr;
  detail::parallel_for(
      0,
      a.rows,
      std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(cols, 1)),
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* xr = x + r * cols;
          double m = 0, v = 0, unused = 0;
          lane_sums(cols, m, unused, [&](int64_t j, double& s, double&) { s += double(xr[j]); });
          m /= double(cols);
          lane_sums(cols, v, unused, [&](int64_t j, double& s, double&) {
            const double d = double(xr[j]) - m;
            s += d * d;
          });
          const double is = 1.0 / std::sqrt(v / double(cols) + a.eps);
          mean[r] = T(m), invstd[r] = T(is);
          T* yr = y + r * cols;
          affine_runs(ai, r, cols, [&](int64_t j0, int64_t len, int64_t k) {
            const T* xs = xr + j0;
            T* ys = yr + j0;
            if (k < 0) {
              for (int64_t j = 0; j < len; ++j)
                ys[j] = T(kernels::row_norm_value(
                    double(xs[j]), m, is, double(wc[j0 + j]), double(bc[j0 + j])));
              return;
            }
            const double wk = w ? double(w[k]) : 1.0, bk = b ? double(b[k]) : 0.0;
            for (int64_t j = 0; j < len; ++j)
              ys[j] = T(kernels::row_norm_value(double(xs[j]), m, is, wk, bk));
          });
        }
      });
}

template <class T>
void row_norm_backward(const RowNormBackwardArgs& a) {
  const AffineIndex ai{a.groups, a.channels_per_group, a.s};
  const T *x = data_or_null<T>(a.input), *g = data_or_null<T>(a.grad_out),
          *w = data_or_null<T>(a.weight);
  const T *mean = data_or_null<T>(a.mean), *invstd = data_or_null<T>(a.invstd);
  T* gi = data_or_null<T>(a.grad_input);
  const int64_t cols = a.cols, width = ai.size(cols);
  const bool affine = a.grad_weight.defined();
  std::vector<T> ones;
  const T* wc = ai.groups == 0 ? per_column(w, cols, T(1), ones) : nullptr;
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(cols, 1));
  const int64_t chunks = chunks_for(a.rows, grain);
  // Per chunk: partial sums of grad_weight (first width) and grad_bias (next width).
  std::vector<double> acc(affine ? size_t(chunks * 2 * width) : 0, 0.0);
  parallel_chunks(a.rows, grain, [&](int64_t ck, int64_t r0, int64_t r1) {
    double* pw = affine ? acc.data() + ck * 2 * width : nullptr;
    for (int64_t r = r0; r < r1; ++r) {
      const T *xr = x + r * cols, *gr = g + r * cols;
      const double m = double(mean[r]), is = double(invstd[r]);
      // The row sums of gx = g * w and gx * xhat, and the parameter gradients' terms.
      double sg = 0, sgx = 0;
      affine_runs(ai, r, cols, [&](int64_t j0, int64_t len, int64_t k) {
        const T *xs = xr + j0, *gs = gr + j0;
        if (k < 0) {  // layer norm: a weight per column
          lane_sums(len, sg, sgx, [&](int64_t j, double& s0, double& s1) {
            const double gx = double(gs[j]) * double(wc[j0 + j]);
            s0 += gx, s1 += gx * ((double(xs[j]) - m) * is);
          });
          if (pw)
            for (int64_t j = 0; j < len; ++j) {
              const double gv = double(gs[j]);
              pw[j0 + j] += gv * ((double(xs[j]) - m) * is), pw[width + j0 + j] += gv;
            }
          return;
        }
        double s0 = 0, s1 = 0;  // sums of g and g * xhat over the channel's run
        lane_sums(len, s0, s1, [&](int64_t j, double& t0, double& t1) {
          const double gv = double(gs[j]);
          t0 += gv, t1 += gv * ((double(xs[j]) - m) * is);
        });
        const double wk = w ? double(w[k]) : 1.0;
        sg += wk * s0, sgx += wk * s1;
        if (pw) pw[k] += s1, pw[width + k] += s0;
      });
      sg /= double(cols), sgx /= double(cols);
      T* gir = gi + r * cols;
      affine_runs(ai, r, cols, [&](int64_t j0, int64_t len, int64_t k) {
        const T *xs = xr + j0, *gs = gr + j0;
        T* out = gir + j0;
        if (k < 0) {
          for (int64_t j = 0; j < len; ++j)
            out[j] = T(kernels::row_norm_grad(
                double(xs[j]), double(gs[j]), double(wc[j0 + j]), m, is, sg, sgx));
          return;
        }
        const double wk = w ? double(w[k]) : 1.0;
        for (int64_t j = 0; j < len; ++j)
          out[j] = T(kernels::row_norm_grad(double(xs[j]), double(gs[j]), wk, m, is, sg, sgx));
      });
    }
  });
  if (!affine) return;
  std::vector<double> tot(static_cast<size_t>(2 * width));
  reduce_chunks(acc, chunks, 2 * width, tot.data());
  T *gw = data_or_null<T>(a.grad_weight), *gb = data_or_null<T>(a.grad_bias);
  for (int64_t k = 0; k < width; ++k) gw[k] = T(tot[k]), gb[k] = T(tot[width + k]);
}

}  // namespace

void register_row_norm_cpu() {
  detail::row_norm_forward_kernel.set(DeviceType::CPU, [](const RowNormArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { row_norm_forward<T>(a); });
  });
  detail::row_norm_backward_kernel.set(DeviceType::CPU, [](const RowNormBackwardArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { row_norm_backward<T>(a); });
  });
}

}  // namespace ignis::cpu
