// Tests of batch/layer/group norm (forward and backward) against the formulas in float64
// written here: running-statistics updates over several calls, eval mode with running stats,
// NCHW and channels-last, finite differences, and error messages.
#include <cmath>

#include "nn/nn_test_helpers.h"

namespace ignis {
namespace {

using namespace ignis::testing;

/// Normalises each group of `idx(i)` equal keys: returns xhat and per-key mean / biased var.
struct Stats {
  std::vector<double> mean, var;
};
template <class Key>
Stats stats(const std::vector<double>& x, int64_t keys, const Key& key) {
  Stats s{std::vector<double>(size_t(keys), 0.0), std::vector<double>(size_t(keys), 0.0)};
  std::vector<double> cnt(size_t(keys), 0.0);
  for (size_t i = 0; i < x.size(); ++i) s.mean[key(i)] += x[i], cnt[key(i)] += 1;
  for (int64_t k = 0; k < keys; ++k) s.mean[k] /= cnt[k];
  for (size_t i = 0; i < x.size(); ++i) s.var[key(i)] += std::pow(x[i] - s.mean[key(i)], 2);
  for (int64_t k = 0; k < keys; ++k) s.var[k] /= cnt[k];
  return s;
}

TEST(BatchNorm, TrainingRunningStatsAndEval) {
  // [N, C, 3, 2] in NCHW and channels-last, and BatchNorm1d's [N, C] (one value per channel
  // and sample, walked as rows of C like channels-last).
  for (const Shape& xs : {Shape{3, 4, 3, 2}, Shape{40, 4}})
    for (DType dtype : {kFloat32, kFloat64})
      for (bool cl : {false, true}) {
        if (cl && xs.size() != 4) continue;
        const int64_t N = xs[0], C = xs[1], S = numel_of(xs) / (N * C);
        SCOPED_TRACE(fmt::format("{} {} {}", detail::shape_str(xs), dtype_name(dtype), cl));
        const double tol = dtype == kFloat64 ? 1e-10 : 1e-4, eps = 1e-5, mom = 0.1;
        const auto w = random_values(C, 0.5, 1.5, 1), b = random_values(C, -1, 1, 2);
        Tensor rm = zeros({C}, dtype), rv = ones({C}, dtype);
        std::vector<double> erm(C, 0.0), erv(C, 1.0);
        for (int call = 0; call < 3; ++call) {
          const auto x = random_values(N * C * S, -2, 3, 10 + call);
          auto key = [&](size_t i) { return (int64_t(i) / S) % C; };
          const Stats st = stats(x, C, key);
          std::vector<double> y(x.size());
          for (size_t i = 0; i < x.size(); ++i)
            y[i] =
                (x[i] - st.mean[key(i)]) / std::sqrt(st.var[key(i)] + eps) * w[key(i)] + b[key(i)];
          for (int64_t c = 0; c < C; ++c) {
            erm[c] = (1 - mom) * erm[c] + mom * st.mean[c];
            erv[c] = (1 - mom) * erv[c] + mom * st.var[c] * double(N * S) / double(N * S - 1);
          }
          const Tensor tx = make_nchw(x, xs, dtype, cl);
          const auto r = detail::batch_norm_forward(
              tx, make_input(w, {C}, dtype), make_input(b, {C}, dtype), rm, rv, true, mom, eps);
          EXPECT_EQ(detail::is_channels_last(r.output), cl);
          EXPECT_TRUE(all_close(r.output, y, tol, tol));
          EXPECT_TRUE(all_close(rm, erm, tol, tol)) << "running_mean after call " << call;
          EXPECT_TRUE(all_close(rv, erv, tol, tol)) << "running_var after call " << call;
        }
        // Eval: normalised with the running statistics; gradient = g * w / sqrt(rv + eps).
        const auto x = random_values(N * C * S, -2, 3, 50), g = random_values(N * C * S, -1, 1, 51);
        std::vector<double> y(x.size()), gi(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          const int64_t c = (int64_t(i) / S) % C;
          y[i] = (x[i] - erm[c]) / std::sqrt(erv[c] + eps) * w[c] + b[c];
          gi[i] = g[i] * w[c] / std::sqrt(erv[c] + eps);
        }
        const Tensor tx = make_nchw(x, xs, dtype, cl), tw = make_input(w, {C}, dtype);
        const auto r =
            detail::batch_norm_forward(tx, tw, make_input(b, {C}, dtype), rm, rv, false, mom, eps);
        EXPECT_TRUE(all_close(r.output, y, tol, tol));
        EXPECT_TRUE(all_close(rm, erm, tol, tol)) << "eval must not update running stats";
        const auto gr = detail::batch_norm_backward(
            make_nchw(g, xs, dtype, cl), tx, tw, r.save_mean, r.save_invstd, false);
        EXPECT_TRUE(all_close(gr.input, gi, tol, tol));
      }
}

/// Finite-difference check of one norm op in float64: f(x, w, b) and its backward.
void check_fd(const std::function<Tensor(const std::vector<Tensor>&)>& f,
              const std::function<detail::NormGrads(const Tensor&, const std::vector<Tensor>&)>& back,
              const Shape& xs, const Shape& ps, bool cl) {
  const auto x = random_values(numel_of(xs), -2, 2, 31), w = random_values(numel_of(ps), 0.5, 1.5, 32),
             b = random_values(numel_of(ps), -1, 1, 33);
  const std::vector<Tensor> t{make_nchw(x, xs, kFloat64, cl && xs.size() == 4), make_input(w, ps, kFloat64), make_input(b, ps, kFloat64)};
  const Tensor out = f(t);
  const auto wts = random_values(out.numel(), -1, 1, 34);
  const auto g = back(make_nchw(wts, xs, kFloat64, cl && xs.size() == 4), t);
  const std::vector<Shape> shapes{xs, ps, ps};
  EXPECT_TRUE(all_close(values_of(g.input), numeric_grad(f, {x, w, b}, shapes, wts, 0), 1e-6, 1e-7)) << "input";
  EXPECT_TRUE(all_close(values_of(g.weight), numeric_grad(f, {x, w, b}, shapes, wts, 1), 1e-6, 1e-7)) << "weight";
  EXPECT_TRUE(all_close(values_of(g.bias), numeric_grad(f, {x, w, b}, shapes, wts, 2), 1e-6, 1e-7)) << "bias";
}

TEST(BatchNorm, TrainingGradientMatchesFiniteDifferences) {
  for (bool cl : {false, true}) {
    SCOPED_TRACE(cl);
    check_fd([](const std::vector<Tensor>& t) { return detail::batch_norm_forward(t[0], t[1], t[2], Tensor(), Tensor(), true, 0.1, 1e-5).output; },
             [](const Tensor& g, const std::vector<Tensor>& t) {
               const auto r = detail::batch_norm_forward(t[0], t[1], t[2], Tensor(), Tensor(), true, 0.1, 1e-5);
               return detail::batch_norm_backward(g, t[0], t[1], r.save_mean, r.save_invstd, true);
             },
             {2, 3, 2, 3}, {3}, cl);
  }
  // BatchNorm1d's [N, C]: the row walk of channels-last, on a contiguous input.
  check_fd(
      [](const std::vector<Tensor>& t) {
        return detail::batch_norm_forward(t[0], t[1], t[2], Tensor(), Tensor(), true, 0.1, 1e-5)
            .output;
      },
      [](const Tensor& g, const std::vector<Tensor>& t) {
        const auto r =
            detail::batch_norm_forward(t[0], t[1], t[2], Tensor(), Tensor(), true, 0.1, 1e-5);
        return detail::batch_norm_backward(g, t[0], t[1], r.save_mean, r.save_invstd, true);
      },
      {7, 5},
      {5},
      false);
}

TEST(LayerNorm, ForwardAndGradients) {
  const Shape xs{3, 4, 5}, ns{4, 5};
  for (DType dtype : {kFloat32, kFloat64}) {
    const auto x = random_values(60, -2, 2, 3), w = random_values(20, 0.5, 1.5, 4), b = random_values(20, -1, 1, 5);
    const Stats st = stats(x, 3, [](size_t i) { return int64_t(i) / 20; });
    std::vector<double> y(60);
    for (size_t i = 0; i < 60; ++i) y[i] = (x[i] - st.mean[i / 20]) / std::sqrt(st.var[i / 20] + 1e-5) * w[i % 20] + b[i % 20];
    const auto r = detail::layer_norm_forward(make_input(x, xs, dtype), ns, make_input(w, ns, dtype), make_input(b, ns, dtype), 1e-5);
    EXPECT_EQ(r.save_mean.sizes(), (Shape{3, 1, 1}));
    EXPECT_TRUE(all_close(r.output, y, dtype == kFloat64 ? 1e-10 : 1e-4, 1e-5));
  }
  check_fd([&](const std::vector<Tensor>& t) { return detail::layer_norm_forward(t[0], ns, t[1], t[2], 1e-5).output; },
           [&](const Tensor& g, const std::vector<Tensor>& t) {
             const auto r = detail::layer_norm_forward(t[0], ns, t[1], t[2], 1e-5);
             return detail::layer_norm_backward(g, t[0], ns, r.save_mean, r.save_invstd, t[1]);
           },
           xs, ns, false);
}

TEST(LayerNorm, WithoutWeightOrBias) {
  // An absent weight is 1 and an absent bias 0 in every column: the same outputs and input
  // gradients as passing those explicitly (whose path the test above checks by formula and
  // finite differences).
  const Shape xs{6, 21}, ns{21};
  const auto x = random_values(126, -2, 2, 40), g = random_values(126, -1, 1, 41),
             w = random_values(21, 0.5, 1.5, 42);
  const Tensor tx = make_input(x, xs, kFloat64), tg = make_input(g, xs, kFloat64),
               tw = make_input(w, ns, kFloat64);
  const Tensor one = ones(ns, kFloat64), zero = zeros(ns, kFloat64);
  for (const auto& [weight, bias, ew, eb] :
       {std::tuple{Tensor(), Tensor(), one, zero},
        {tw, Tensor(), tw, zero},
        {Tensor(), tw, one, tw}}) {
    const auto r = detail::layer_norm_forward(tx, ns, weight, bias, 1e-5);
    const auto e = detail::layer_norm_forward(tx, ns, ew, eb, 1e-5);
    EXPECT_TRUE(all_close(r.output, values_of(e.output), 1e-14, 1e-14));
    const auto gr = detail::layer_norm_backward(tg, tx, ns, r.save_mean, r.save_invstd, weight);
    const auto ge = detail::layer_norm_backward(tg, tx, ns, e.save_mean, e.save_invstd, ew);
    EXPECT_TRUE(all_close(gr.input, values_of(ge.input), 1e-14, 1e-14));
  }
}

TEST(GroupNorm, LongChannelRunsAndNoAffine) {
  // 15 values per channel: the channel loops' 8-lane blocks and their tails; then the same
  // without weight and bias against the weight-1, bias-0 call.
  const Shape xs{2, 6, 3, 5};
  check_fd(
      [](const std::vector<Tensor>& t) {
        return detail::group_norm_forward(t[0], 3, t[1], t[2], 1e-5).output;
      },
      [](const Tensor& g, const std::vector<Tensor>& t) {
        const auto r = detail::group_norm_forward(t[0], 3, t[1], t[2], 1e-5);
        return detail::group_norm_backward(g, t[0], 3, r.save_mean, r.save_invstd, t[1]);
      },
      xs,
      {6},
      false);
  const Tensor tx = make_input(random_values(180, -2, 2, 43), xs, kFloat64),
               tg = make_input(random_values(180, -1, 1, 44), xs, kFloat64);
  const auto r = detail::group_norm_forward(tx, 3, Tensor(), Tensor(), 1e-5);
  const auto e = detail::group_norm_forward(tx, 3, ones({6}, kFloat64), zeros({6}, kFloat64), 1e-5);
  EXPECT_TRUE(all_close(r.output, values_of(e.output), 1e-14, 1e-14));
  const auto gr = detail::group_norm_backward(tg, tx, 3, r.save_mean, r.save_invstd, Tensor());
  const auto ge =
      detail::group_norm_backward(tg, tx, 3, e.save_mean, e.save_invstd, ones({6}, kFloat64));
  EXPECT_TRUE(all_close(gr.input, values_of(ge.input), 1e-14, 1e-14));
}

TEST(GroupNorm, ForwardAndGradients) {
  const int64_t N = 2, C = 6, G = 3, S = 4;
  for (DType dtype : {kFloat32, kFloat64})
    for (bool cl : {false, true}) {
      const auto x = random_values(N * C * S, -2, 2, 6), w = random_values(C, 0.5, 1.5, 7), b = random_values(C, -1, 1, 8);
      auto key = [&](size_t i) { return int64_t(i) / (C / G * S); };
      const Stats st = stats(x, N * G, key);
      std::vector<double> y(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const int64_t c = (int64_t(i) / S) % C;
        y[i] = (x[i] - st.mean[key(i)]) / std::sqrt(st.var[key(i)] + 1e-5) * w[c] + b[c];
      }
      const auto r = detail::group_norm_forward(make_nchw(x, {N, C, 2, 2}, dtype, cl), G, make_input(w, {C}, dtype), make_input(b, {C}, dtype), 1e-5);
      EXPECT_EQ(detail::is_channels_last(r.output), cl);
      EXPECT_TRUE(all_close(r.output, y, dtype == kFloat64 ? 1e-10 : 1e-4, 1e-5));
    }
  for (bool cl : {false, true})
    check_fd([&](const std::vector<Tensor>& t) { return detail::group_norm_forward(t[0], G, t[1], t[2], 1e-5).output; },
             [&](const Tensor& g, const std::vector<Tensor>& t) {
               const auto r = detail::group_norm_forward(t[0], G, t[1], t[2], 1e-5);
               return detail::group_norm_backward(g, t[0], G, r.save_mean, r.save_invstd, t[1]);
             },
             {N, C, 2, 2}, {C}, cl);
}

/// Rows normalised on their own in float64 loops: output y and, for upstream gradient g, the
/// input, weight and bias gradients; param(r, j) is the affine index of column j of row r.
struct RowNormRef {
  std::vector<double> y, gi, gw, gb;
};
template <class Param>
RowNormRef row_norm_ref(
    const std::vector<double>& x,
    const std::vector<double>& g,
    const std::vector<double>& w,
    const std::vector<double>& b,
    int64_t rows,
    int64_t cols,
    const Param& param,
    double eps) {
  RowNormRef o{
      std::vector<double>(x.size()),
      std::vector<double>(x.size()),
      std::vector<double>(w.size(), 0.0),
      std::vector<double>(w.size(), 0.0)};
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * cols;
    const double* gr = g.data() + r * cols;
    double m = 0, v = 0, sg = 0, sgx = 0;
    for (int64_t j = 0; j < cols; ++j) m += xr[j];
    m /= double(cols);
    for (int64_t j = 0; j < cols; ++j) v += (xr[j] - m) * (xr[j] - m);
    const double is = 1 / std::sqrt(v / double(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      const auto k = size_t(param(r, j));
      const double xh = (xr[j] - m) * is;
      o.y[size_t(r * cols + j)] = xh * w[k] + b[k];
      sg += gr[j] * w[k], sgx += gr[j] * w[k] * xh;
      o.gw[k] += gr[j] * xh, o.gb[k] += gr[j];
    }
    sg /= double(cols), sgx /= double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const double xh = (xr[j] - m) * is;
      o.gi[size_t(r * cols + j)] = is * (gr[j] * w[size_t(param(r, j))] - sg - xh * sgx);
    }
  }
  return o;
}

/// Values rounded to float32, so a float32 tensor holds them exactly.
std::vector<double> float_values(std::vector<double> v) {
  for (double& e : v) e = double(float(e));
  return v;
}

// float32 rows are computed in float with double totals (src/cpu/row_norm.cpp): against the
// float64 loops on the same float32 values, for rows longer than one fold of the float lanes
// (3000 > 16 * 64), more rows than one fold of the weight-gradient partials (300 > 64), and
// (forward only) rows whose mean is large against their spread, which the float loops centre
// exactly. The backward reads the saved float32 mean, as PyTorch's does, so it gets ordinary
// rows.
TEST(LayerNorm, Float32RowsMatchFloat64Loops) {
  const int64_t R = 300, C = 3000;
  auto xv = random_values(R * C, -2, 2, 60);
  const auto g = float_values(random_values(R * C, -1, 1, 61));
  const auto w = float_values(random_values(C, 0.5, 1.5, 62));
  const auto b = float_values(random_values(C, -1, 1, 63));
  const auto column = [](int64_t, int64_t j) { return j; };
  const Tensor tw = make_input(w, {C}, kFloat32), tb = make_input(b, {C}, kFloat32);
  {
    xv = float_values(xv);
    const Tensor x = make_input(xv, {R, C}, kFloat32);
    const auto ref = row_norm_ref(xv, g, w, b, R, C, column, 1e-5);
    const auto r = detail::layer_norm_forward(x, {C}, tw, tb, 1e-5);
    EXPECT_TRUE(all_close(r.output, ref.y, 1e-5, 1e-5));
    const auto gr = detail::layer_norm_backward(
        make_input(g, {R, C}, kFloat32), x, {C}, r.save_mean, r.save_invstd, tw);
    EXPECT_TRUE(all_close(gr.input, ref.gi, 1e-4, 1e-5));
    EXPECT_TRUE(all_close(gr.weight, ref.gw, 1e-5, 1e-4));
    EXPECT_TRUE(all_close(gr.bias, ref.gb, 1e-5, 1e-4));
  }
  // Every row around 1000 with a spread of 0.02: float sums of the raw values would lose the
  // centre (ulp(1000) is 6e-5); the output matches the float64 loops still.
  auto offset = xv;
  for (double& e : offset) e = 1000 + 0.01 * e;
  offset = float_values(offset);
  const auto ref = row_norm_ref(offset, g, w, b, R, C, column, 1e-5);
  const auto r =
      detail::layer_norm_forward(make_input(offset, {R, C}, kFloat32), {C}, tw, tb, 1e-5);
  EXPECT_TRUE(all_close(r.output, ref.y, 1e-4, 1e-4));
}

// Batch norm in float32 is computed in float with double totals, as the 16-bit inputs are
// (Note [Batch norm on 16-bit inputs]): against the float64 loops on the same float32 values,
// each channel gathered into one row of row_norm_ref. NCHW channels of 20480 values (many
// folds of the float lanes), channels-last, and BatchNorm1d's [N, C] with more rows than one
// 64 KiB block (3000 rows of 21) and channel rows longer than one staged piece (520), and an
// input of more than 4 MB, whose output and input gradient go out with streaming stores. Then
// the statistics of channels whose mean is large against their spread (1000 +- 0.02), which
// float sums keep by summing offsets from a value of the channel.
TEST(BatchNorm, Float32MatchesFloat64Loops) {
  for (const Shape& xs :
       {Shape{5, 2, 64, 64}, Shape{3000, 21}, Shape{40, 520}, Shape{4, 8, 184, 180}})
    for (bool cl : {false, true})
      for (bool offset : {false, true}) {
        if (cl && xs.size() != 4) continue;
        SCOPED_TRACE(fmt::format("{} cl {} offset {}", detail::shape_str(xs), cl, offset));
        const int64_t N = xs[0], C = xs[1], S = numel_of(xs) / (N * C), M = N * S;
        auto xv = random_values(N * C * S, -2, 3, 80);
        if (offset)
          for (double& e : xv) e = 1000 + 0.01 * e;
        xv = float_values(xv);
        const auto g = float_values(random_values(N * C * S, -1, 1, 81));
        const auto w = float_values(random_values(C, 0.5, 1.5, 82));
        const auto b = float_values(random_values(C, -1, 1, 83));
        // Channel c as row c: element (n, c, s) at column n * S + s.
        std::vector<double> xr(xv.size()), gr(g.size());
        auto at = [&](int64_t c, int64_t j) { return size_t((j / S * C + c) * S + j % S); };
        for (int64_t c = 0; c < C; ++c)
          for (int64_t j = 0; j < M; ++j)
            xr[size_t(c * M + j)] = xv[at(c, j)], gr[size_t(c * M + j)] = g[at(c, j)];
        const auto channel = [](int64_t r, int64_t) { return r; };
        const auto ref = row_norm_ref(xr, gr, w, b, C, M, channel, 1e-5);
        std::vector<double> y(xv.size()), gi(xv.size());
        std::vector<double> mean(static_cast<size_t>(C)), rm(mean.size()), rv(mean.size()),
            invstd(mean.size());
        for (int64_t c = 0; c < C; ++c) {
          double m = 0, q = 0;
          for (int64_t j = 0; j < M; ++j) m += xr[size_t(c * M + j)];
          m /= double(M);
          for (int64_t j = 0; j < M; ++j) q += std::pow(xr[size_t(c * M + j)] - m, 2);
          mean[size_t(c)] = m, rm[size_t(c)] = 0.1 * m;
          rv[size_t(c)] = 0.9 + 0.1 * q / double(M - 1);
          invstd[size_t(c)] = 1 / std::sqrt(q / double(M) + 1e-5);
          for (int64_t j = 0; j < M; ++j)
            y[at(c, j)] = ref.y[size_t(c * M + j)], gi[at(c, j)] = ref.gi[size_t(c * M + j)];
        }
        const Tensor x = make_nchw(xv, xs, kFloat32, cl), tw = make_input(w, {C}, kFloat32);
        Tensor run_mean = zeros({C}), run_var = ones({C});
        const auto r = detail::batch_norm_forward(
            x, tw, make_input(b, {C}, kFloat32), run_mean, run_var, true, 0.1, 1e-5);
        EXPECT_TRUE(all_close(r.save_mean, mean, 1e-7, 2e-6));
        EXPECT_TRUE(all_close(r.save_invstd, invstd, offset ? 1e-5 : 1e-6, 0));
        EXPECT_TRUE(all_close(run_mean, rm, 1e-6, 1e-6));
        EXPECT_TRUE(all_close(run_var, rv, 1e-6, 1e-6));
        // With the offset, x * scale + shift (the output's form, as PyTorch's) rounds at
        // ulp(1000 * invstd), and the backward reads the saved float32 mean, as PyTorch's
        // does: the outputs and gradients are checked on ordinary data.
        if (offset) continue;
        EXPECT_TRUE(all_close(r.output, y, 1e-5, 1e-5));
        const auto gr32 = detail::batch_norm_backward(
            make_nchw(g, xs, kFloat32, cl), x, tw, r.save_mean, r.save_invstd, true);
        EXPECT_TRUE(all_close(gr32.input, gi, 1e-4, 1e-5));
        EXPECT_TRUE(all_close(gr32.weight, ref.gw, 1e-5, 1e-4));
        EXPECT_TRUE(all_close(gr32.bias, ref.gb, 1e-5, 1e-4));
      }
}

// Group norm's channel runs in float32: [4, 8, 40, 40] in 2 groups (runs of 1600 values, past
// one fold of the float lanes), NCHW, against the float64 loops.
TEST(GroupNorm, Float32RowsMatchFloat64Loops) {
  const int64_t N = 4, C = 8, G = 2, HW = 1600, cols = C / G * HW;
  const auto x = float_values(random_values(N * C * HW, -2, 3, 70));
  const auto g = float_values(random_values(N * C * HW, -1, 1, 71));
  const auto w = float_values(random_values(C, 0.5, 1.5, 72));
  const auto b = float_values(random_values(C, -1, 1, 73));
  const auto channel = [&](int64_t r, int64_t j) { return (r % G) * (C / G) + j / HW; };
  const auto ref = row_norm_ref(x, g, w, b, N * G, cols, channel, 1e-5);
  const Tensor tx = make_input(x, {N, C, 40, 40}, kFloat32), tw = make_input(w, {C}, kFloat32);
  const auto r = detail::group_norm_forward(tx, G, tw, make_input(b, {C}, kFloat32), 1e-5);
  EXPECT_TRUE(all_close(r.output, ref.y, 1e-5, 1e-5));
  const auto gr = detail::group_norm_backward(
      make_input(g, {N, C, 40, 40}, kFloat32), tx, G, r.save_mean, r.save_invstd, tw);
  EXPECT_TRUE(all_close(gr.input, ref.gi, 1e-4, 1e-5));
  EXPECT_TRUE(all_close(gr.weight, ref.gw, 1e-5, 1e-4));
  EXPECT_TRUE(all_close(gr.bias, ref.gb, 1e-5, 1e-4));
}

TEST(Norm, ErrorMessages) {
  EXPECT_THROW_MSG(detail::batch_norm_forward(zeros({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5),
                   ValueError, "[batch_norm] expected more than 1 value per channel when training, got input size [1, 3]");
  EXPECT_THROW_MSG(detail::batch_norm_forward(zeros({2, 3}), zeros({4}), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5),
                   ShapeError, "[batch_norm] expected weight of shape [3], got [4]");
  EXPECT_THROW_MSG(detail::batch_norm_forward(zeros({2, 3}), Tensor(), Tensor(), Tensor(), Tensor(), false, 0.1, 1e-5),
                   ValueError, "[batch_norm] running_mean and running_var are required in eval mode");
  EXPECT_THROW_MSG(detail::layer_norm_forward(zeros({2, 3, 4}), {3, 5}, Tensor(), Tensor(), 1e-5), ShapeError,
                   "[layer_norm] expected input with shape [*, 3, 5], but got input of shape [2, 3, 4]");
  EXPECT_THROW_MSG(detail::group_norm_forward(zeros({2, 6, 4}), 4, Tensor(), Tensor(), 1e-5), ValueError,
                   "[group_norm] expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 4] and num_groups = 4");
}

}  // namespace
}  // namespace ignis
