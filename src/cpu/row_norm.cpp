// CPU kernels of the row norms, layer norm and group norm: each row of a contiguous [rows, cols]
// view is normalised with its own mean and variance (two passes, totals in double), then
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

// A row is normalised with one mean and variance; its affine parameters are indexed by column
// (layer norm) or are one per channel's run of s columns (group norm). The loops compute in
// the row's own type (float for float32 rows: twice the vector width of double) and sum in
// kLanes lanes of it; float lanes join double totals every kFoldEvery values per lane, so no
// float sum runs longer than that (the rule of the softmax rows and of batch norm's 16-bit
// loops). A group-norm row goes channel by channel, so no element pays AffineIndex's division.
constexpr int64_t kLanes = 16;
constexpr int64_t kFoldEvery = 64;

/// The sums over j in [0, n) of the pair f(j) adds to (s0, s1): f(j, s0, s1) adds its terms
/// of column j into lanes of type A, which are folded into the double totals out0 and out1
/// every kLanes * kFoldEvery columns.
template <class A, class F>
void lane_sums(int64_t n, double& out0, double& out1, const F& f) {
  for (int64_t b = 0; b < n; b += kLanes * kFoldEvery) {
    const int64_t e = std::min(n, b + kLanes * kFoldEvery);
    const int64_t full = b + (e - b) / kLanes * kLanes;
    A s0[kLanes] = {}, s1[kLanes] = {};
    for (int64_t j = b; j < full; j += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) f(j + l, s0[l], s1[l]);
    for (int64_t j = full; j < e; ++j) f(j, s0[j - full], s1[j - full]);
    for (int64_t l = 0; l < kLanes; ++l) out0 += double(s0[l]), out1 += double(s1[l]);
  }
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
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(cols, 1));
  detail::parallel_for(0, a.rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * cols;
      // Summed as offsets from the row's first value, so float lanes keep their digits when
      // the mean is large against the spread.
      const T x0 = cols > 0 ? xr[0] : T(0);
      double m = 0, v = 0, unused = 0;
      lane_sums<T>(cols, m, unused, [&](int64_t j, T& s, T&) { s += xr[j] - x0; });
      m = double(x0) + m / double(cols);
      // The mean as T and the remainder: x - mean is (x - mt) - ml, exact enough in float
      // even when the mean is large against the spread (ml is 0 for double rows).
      const T mt = T(m), ml = T(m - double(mt));
      lane_sums<T>(cols, v, unused, [&](int64_t j, T& s, T&) {
        const T d = (xr[j] - mt) - ml;
        s += d * d;
      });
      const double is = 1.0 / std::sqrt(v / double(cols) + a.eps);
      mean[r] = mt, invstd[r] = T(is);
      const T ist = T(is);
      T* yr = y + r * cols;
      affine_runs(ai, r, cols, [&](int64_t j0, int64_t len, int64_t k) {
        const T* xs = xr + j0;
        T* ys = yr + j0;
        if (k < 0) {
          for (int64_t j = 0; j < len; ++j)
            ys[j] = kernels::row_norm_value(xs[j], mt, ist, wc[j0 + j], bc[j0 + j], ml);
          return;
        }
        const T wk = w ? w[k] : T(1), bk = b ? b[k] : T(0);
        for (int64_t j = 0; j < len; ++j)
          ys[j] = kernels::row_norm_value(xs[j], mt, ist, wk, bk, ml);
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
  // Per chunk: partial sums of grad_weight (first width) and grad_bias (next width), in
  // double: a column's terms come from every row.
  std::vector<double> acc(affine ? size_t(chunks * 2 * width) : 0, 0.0);
  parallel_chunks(a.rows, grain, [&](int64_t ck, int64_t r0, int64_t r1) {
    double* pw = affine ? acc.data() + ck * 2 * width : nullptr;
    // Layer norm's per-column terms go into T partials first (a vector op per column, where
    // a double add per element would halve the width), folded into pw every kFoldEvery rows.
    std::vector<T> cols_part(pw && ai.groups == 0 ? size_t(2 * width) : 0, T(0));
    T* pt = cols_part.empty() ? nullptr : cols_part.data();
    int64_t pending = 0;
    auto fold_cols = [&] {
      for (int64_t k = 0; k < 2 * width; ++k) pw[k] += double(pt[k]), pt[k] = T(0);
      pending = 0;
    };
    for (int64_t r = r0; r < r1; ++r) {
      const T *xr = x + r * cols, *gr = g + r * cols;
      const T m = mean[r], is = invstd[r];
      // The row sums of gx = g * w and gx * xhat, and the parameter gradients' terms.
      double sg = 0, sgx = 0;
      affine_runs(ai, r, cols, [&](int64_t j0, int64_t len, int64_t k) {
        const T *xs = xr + j0, *gs = gr + j0;
        if (k < 0) {  // layer norm: a weight per column
          lane_sums<T>(len, sg, sgx, [&](int64_t j, T& s0, T& s1) {
            const T gx = gs[j] * wc[j0 + j];
            s0 += gx, s1 += gx * ((xs[j] - m) * is);
          });
          if (pt)
            for (int64_t j = 0; j < len; ++j) {
              const T gv = gs[j];
              pt[j0 + j] += gv * ((xs[j] - m) * is), pt[width + j0 + j] += gv;
            }
          return;
        }
        double s0 = 0, s1 = 0;  // sums of g and g * xhat over the channel's run
        lane_sums<T>(len, s0, s1, [&](int64_t j, T& t0, T& t1) {
          const T gv = gs[j];
          t0 += gv, t1 += gv * ((xs[j] - m) * is);
        });
        const double wk = w ? double(w[k]) : 1.0;
        sg += wk * s0, sgx += wk * s1;
        if (pw) pw[k] += s1, pw[width + k] += s0;
      });
      const T mg = T(sg / double(cols)), mgx = T(sgx / double(cols));
      T* gir = gi + r * cols;
      affine_runs(ai, r, cols, [&](int64_t j0, int64_t len, int64_t k) {
        const T *xs = xr + j0, *gs = gr + j0;
        T* out = gir + j0;
        if (k < 0) {
          for (int64_t j = 0; j < len; ++j)
            out[j] = kernels::row_norm_grad(xs[j], gs[j], wc[j0 + j], m, is, mg, mgx);
          return;
        }
        const T wk = w ? w[k] : T(1);
        for (int64_t j = 0; j < len; ++j)
          out[j] = kernels::row_norm_grad(xs[j], gs[j], wk, m, is, mg, mgx);
      });
      if (pt && ++pending == kFoldEvery) fold_cols();
    }
    if (pt && pending > 0) fold_cols();
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
