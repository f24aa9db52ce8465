// Tests of max/avg/adaptive-avg pooling (forward and backward) against float64 window loops
// written here (PyTorch's window and divisor rules), NCHW and channels-last, float32 and
// float64; max-pool ties and indices (-1 for a window with no tap in the input); finite
// differences; error messages.
#include <cmath>
#include <limits>

#include "nn/nn_test_helpers.h"
#include "ops/nn_kernels.h"

namespace ignis {
namespace {

using namespace ignis::testing;
using detail::Pool2dParams;

/// Output size by PyTorch's rule (written independently of the library's).
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const double v = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t o = int64_t(ceil ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

struct PoolCase {
  const char* name;
  int64_t n, c, h, w;
  Pool2dParams p;
};
Pool2dParams pp(detail::Pair2 k, detail::Pair2 s, detail::Pair2 pad, detail::Pair2 d, bool ceil,
                bool include_pad = true, std::optional<int64_t> div = std::nullopt) {
  Pool2dParams p;
  p.kernel = k, p.stride = s, p.padding = pad, p.dilation = d, p.ceil_mode = ceil;
  p.count_include_pad = include_pad, p.divisor_override = div;
  return p;
}
const PoolCase kPoolCases[] = {
    {"k2s2", 2, 3, 6, 6, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)},
    // Odd sizes: the 2x2 fast path must leave the last row and column out, and must not run
    // for ceil mode's partial windows.
    {"k2s2_odd", 2, 3, 7, 9, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)},
    {"k2s2_odd_ceil", 1, 2, 7, 9, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, true)},
    // Rows of 18 outputs: two 8-wide vector groups and a scalar tail.
    {"k2s2_wide", 1, 2, 4, 37, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)},
    // 19 channels: in channels-last, two 8-channel vector groups and a tail per pixel.
    {"k2s2_channels", 2, 19, 4, 6, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)},
    {"k3s2p1", 2, 3, 7, 8, pp({3, 3}, {2, 2}, {1, 1}, {1, 1}, false)},
    {"ceil", 1, 2, 7, 6, pp({3, 2}, {2, 2}, {1, 1}, {1, 1}, true)},
    {"ceil_no_pad_count", 1, 2, 8, 7, pp({3, 3}, {3, 2}, {1, 0}, {1, 1}, true, false)},
    {"divisor", 1, 2, 5, 5, pp({2, 3}, {1, 2}, {1, 1}, {1, 1}, false, true, 5)},
    {"dilated", 2, 2, 9, 8, pp({3, 2}, {1, 2}, {1, 1}, {2, 3}, true)},
    // Rows and channel counts wide enough for the general windows' vector paths (NCHW: eight
    // output columns whose windows lie inside the row, with stride 1, 2 (even and
    // odd columns split, or gathered at the end of an even row) and 3 (gathers), the last
    // eight columns overlapping the block before; channels-last: eight channels per step).
    {"k3s2p1_wide", 1, 9, 5, 44, pp({3, 3}, {2, 2}, {1, 1}, {1, 1}, false)},
    {"k3s1p1_wide", 1, 10, 4, 40, pp({3, 3}, {1, 1}, {1, 1}, {1, 1}, false)},
    {"k2s3_wide", 2, 9, 5, 61, pp({2, 2}, {3, 3}, {0, 0}, {1, 1}, true)},
    {"dilated_wide", 1, 17, 7, 50, pp({3, 2}, {1, 2}, {1, 1}, {2, 3}, false)},
    // Dilated windows that miss the input altogether (taps at rows -1 and 2 of a 2-row input;
    // at -1 and 1 of a 1-row one): -inf, index -1, and no gradient anywhere from them.
    {"dilated_misses", 2, 3, 2, 5, pp({2, 2}, {1, 1}, {2, 1}, {3, 2}, false)},
    {"dilated_misses_wide", 1, 9, 2, 40, pp({2, 3}, {1, 1}, {2, 1}, {3, 1}, false)},
    {"dilated_outside", 1, 3, 1, 2, pp({2, 2}, {1, 1}, {1, 1}, {2, 2}, false)},
};

struct PoolRef {
  std::vector<double> out, gi;
  std::vector<int64_t> idx;
};
PoolRef ref_pool(const PoolCase& k, bool is_max, const std::vector<double>& x,
                 const std::vector<double>& go, int64_t ho, int64_t wo) {
  const auto& p = k.p;
  const auto s = *p.stride;
  const int64_t dh = is_max ? p.dilation[0] : 1, dw = is_max ? p.dilation[1] : 1;
  PoolRef r;
  r.gi.assign(x.size(), 0.0);
  for (int64_t pl = 0; pl < k.n * k.c; ++pl)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j) {
        const double g = go[size_t((pl * ho + i) * wo + j)];
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t bi = -1, count = 0;
        for (int64_t a = 0; a < p.kernel[0]; ++a)
          for (int64_t e = 0; e < p.kernel[1]; ++e) {
            const int64_t y = i * s[0] - p.padding[0] + a * dh, xx = j * s[1] - p.padding[1] + e * dw;
            if (y < 0 || y >= k.h || xx < 0 || xx >= k.w) continue;
            const double v = x[size_t((pl * k.h + y) * k.w + xx)];
            if (bi < 0 || v > best || std::isnan(v)) best = v, bi = y * k.w + xx;
            sum += v, ++count;
          }
        if (is_max) {
          r.out.push_back(best), r.idx.push_back(bi);
          if (bi >= 0) r.gi[size_t(pl * k.h * k.w + bi)] += g;
          continue;
        }
        // Divisor: the window clipped to the padded input (count_include_pad), or the valid taps.
        const int64_t h0 = i * s[0] - p.padding[0], w0 = j * s[1] - p.padding[1];
        const int64_t h1 = std::min(h0 + p.kernel[0], k.h + p.padding[0]);
        const int64_t w1 = std::min(w0 + p.kernel[1], k.w + p.padding[1]);
        const double div = p.divisor_override ? double(*p.divisor_override)
                           : p.count_include_pad ? double((h1 - h0) * (w1 - w0))
                                                 : double(count);
        r.out.push_back(count ? sum / div : 0.0);
        for (int64_t a = 0; a < p.kernel[0]; ++a)
          for (int64_t e = 0; e < p.kernel[1]; ++e) {
            const int64_t y = h0 + a, xx = w0 + e;
            if (y >= 0 && y < k.h && xx >= 0 && xx < k.w) r.gi[size_t((pl * k.h + y) * k.w + xx)] += g / div;
          }
      }
  return r;
}

TEST(Pool2d, MaxAndAvgMatchWindowLoops) {
  for (const PoolCase& k : kPoolCases)
    for (bool is_max : {true, false})
      for (DType dtype : {kFloat32, kFloat64})
        for (bool cl : {false, true}) {
          if (!is_max && k.p.dilation != detail::Pair2{1, 1}) continue;
          SCOPED_TRACE(fmt::format("{} {} {} {}", k.name, is_max ? "max" : "avg", dtype_name(dtype), cl));
          const Shape xs{k.n, k.c, k.h, k.w};
          // Values on a coarse grid make ties inside windows common (first index must win).
          std::vector<double> x = random_values(numel_of(xs), -2, 2, 21);
          for (double& v : x) v = std::round(v * 2) / 2;
          // Max pooling: NaN (a later one wins) and -inf, and in the first plane a block of
          // -inf whose windows keep their first tap's index.
          if (is_max)
            for (size_t i = 0; i < x.size(); ++i) {
              if (i % 37 == 5 || i % 53 == 11) x[i] = std::numeric_limits<double>::quiet_NaN();
              if (i % 29 == 3 || (i < size_t(4 * k.w) && i % size_t(k.w) < 8)) x[i] = -INFINITY;
            }
          const auto s = *k.p.stride;
          const int64_t dh = is_max ? k.p.dilation[0] : 1, dw = is_max ? k.p.dilation[1] : 1;
          const int64_t ho = out_size(k.h, k.p.kernel[0], s[0], k.p.padding[0], dh, k.p.ceil_mode);
          const int64_t wo = out_size(k.w, k.p.kernel[1], s[1], k.p.padding[1], dw, k.p.ceil_mode);
          const Shape os{k.n, k.c, ho, wo};
          const auto go = random_values(numel_of(os), -1, 1, 22);
          const PoolRef r = ref_pool(k, is_max, x, go, ho, wo);
          const Tensor tx = make_nchw(x, xs, dtype, cl), tg = make_nchw(go, os, dtype, cl);
          const double tol = dtype == kFloat64 ? 1e-12 : 1e-5;
          if (is_max) {
            const auto res = detail::max_pool2d_forward(tx, k.p);
            ASSERT_EQ(res.output.sizes(), os);
            EXPECT_EQ(detail::is_channels_last(res.output), cl);
            EXPECT_TRUE(all_close(res.output, r.out, tol, tol));
            const auto idx = res.indices.to_vector<int64_t>();
            EXPECT_EQ(idx, r.idx);
            EXPECT_TRUE(all_close(detail::max_pool2d_backward(tg, tx, res.indices, k.p), r.gi, tol, tol));
          } else {
            const Tensor out = detail::avg_pool2d_forward(tx, k.p);
            ASSERT_EQ(out.sizes(), os);
            EXPECT_EQ(detail::is_channels_last(out), cl);
            EXPECT_TRUE(all_close(out, r.out, tol, tol));
            EXPECT_TRUE(all_close(detail::avg_pool2d_backward(tg, tx, k.p), r.gi, tol, tol));
          }
        }
}

TEST(Pool2d, AvgPoolLayoutsAgreeToTheBit) {
  // Forward: NCHW float32 rows take eight interior columns at a time, summing in double in the
  // window loops' order; channels-last sums blocks of 16 channels the same way. Backward: NCHW
  // planes scatter each output's share over its window; channels-last gathers each input
  // pixel's shares (float division standing in for the planes' double one). Each pair must
  // agree to the bit (stride 1, 2 on even and odd rows, 3 with windows that skip pixels;
  // padding counted or not; divisor overrides, one not exact in float; ceil mode's partial
  // windows), with channel counts of one partial block and of two full blocks and a partial
  // one, and gradients of every magnitude down to shares below float's normal range.
  struct Case {
    int64_t h, w;
    Pool2dParams p;
  };
  const Case cases[] = {
      {6, 40, pp({3, 3}, {1, 1}, {1, 1}, {1, 1}, false)},
      {7, 44, pp({3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false)},
      {7, 45, pp({3, 2}, {2, 2}, {1, 1}, {1, 1}, true)},
      {5, 61, pp({2, 2}, {3, 3}, {0, 0}, {1, 1}, true, true, 3)},
      {6, 9, pp({3, 3}, {1, 1}, {1, 1}, {1, 1}, false, true, 7)},
      {5, 8, pp({2, 2}, {1, 1}, {0, 0}, {1, 1}, false, true, 16777217)},  // not a float
  };
  for (const Case& k : cases)
    for (const int64_t channels : {3, 37}) {
      SCOPED_TRACE(fmt::format("{}x{}, {} channels", k.h, k.w, channels));
      const Shape xs{2, channels, k.h, k.w};
      const Tensor x = make_nchw(random_values(numel_of(xs), -2, 2, 23), xs, kFloat32, false);
      const Tensor nchw = detail::avg_pool2d_forward(x, k.p);
      const Tensor xl = x.contiguous(MemoryFormat::channels_last);
      const Tensor cl = detail::avg_pool2d_forward(xl, k.p);
      EXPECT_EQ(values_of(nchw), values_of(cl));

      std::vector<double> g = random_values(nchw.numel(), -3, 3, 24);
      for (size_t i = 0; i < g.size(); ++i) g[i] = std::ldexp(g[i], -int(i % 140));  // to 2^-140
      const Tensor go = make_nchw(g, nchw.sizes(), kFloat32, false);
      const Tensor planes = detail::avg_pool2d_backward(go, x, k.p);
      const Tensor gathered =
          detail::avg_pool2d_backward(go.contiguous(MemoryFormat::channels_last), xl, k.p);
      EXPECT_TRUE(detail::is_channels_last(gathered));
      EXPECT_EQ(values_of(planes), values_of(gathered));
    }
}

TEST(Pool2d, MaxPoolTiesNaNAnd3dInput) {
  // A constant plane: every window's first element is its maximum.
  const Tensor x = ones({2, 4, 4});
  const auto r = detail::max_pool2d_forward(x, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false));
  ASSERT_EQ(r.output.sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 8, 10, 0, 2, 8, 10}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor y = make_input({1, nan, 3, 2}, {1, 1, 2, 2}, kFloat64);
  const auto ry = detail::max_pool2d_forward(y, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false));
  EXPECT_TRUE(std::isnan(ry.output.item<double>()));
  EXPECT_EQ(ry.indices.item<int64_t>(), 1);
  // The same in float rows wide enough for the vector path: NaN at each tap of each window,
  // -inf windows, and a later NaN winning over an earlier one.
  const int64_t W = 32;
  std::vector<double> v(size_t(2 * W));
  for (int64_t i = 0; i < 2 * W; ++i) v[size_t(i)] = double((i * 7) % 5);
  for (int64_t o = 0; o < W / 2; ++o) {
    const int64_t tap = o % 4, at = (tap / 2) * W + 2 * o + tap % 2;
    if (o % 3 == 0) v[size_t(at)] = nan;
    if (o % 5 == 0) v[size_t(W + 2 * o + 1)] = nan;
    if (o == 7) v[size_t(2 * o)] = v[size_t(2 * o + 1)] = v[size_t(W + 2 * o)] = v[size_t(W + 2 * o + 1)] = -INFINITY;
  }
  const Tensor z = make_input(v, {1, 1, 2, W}, kFloat32);
  const auto rz = detail::max_pool2d_forward(z, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false));
  const auto zi = rz.indices.to_vector<int64_t>();
  const auto zo = rz.output.to(kFloat64).to_vector<double>();
  for (int64_t o = 0; o < W / 2; ++o) {
    int64_t best = 2 * o;
    double m = -INFINITY;
    for (int64_t at : {2 * o, 2 * o + 1, W + 2 * o, W + 2 * o + 1}) {
      const double x = v[size_t(at)];
      if (x > m || std::isnan(x)) m = x, best = at;
    }
    EXPECT_EQ(zi[size_t(o)], best) << "window " << o;
    EXPECT_TRUE(std::isnan(m) ? std::isnan(zo[size_t(o)]) : zo[size_t(o)] == m) << "window " << o;
  }
}

TEST(Pool2d, MaxPoolWritesOnlyItsOutputColumns) {
  // Taps at w = -3, 0, 3 over a row one pixel wide: Wo = 1, and the first column whose window
  // starts inside the row (ceil(pad / stride) = 3) lies past the output. Each output is its
  // input pixel, index h.
  detail::Pool2dParams p = pp({1, 3}, {1, 1}, {0, 3}, {1, 3}, false);
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = make_input({0, 1, 2, 3, 4, 5}, {1, 2, 3, 1}, dtype);
    // Output rows one column wide inside rows of four: columns 1-3 hold sentinels the kernel
    // must leave alone.
    Tensor out = full({1, 2, 3, 4}, 42.0, TensorOptions(dtype));
    Tensor idx = full({1, 2, 3, 4}, int64_t(42), TensorOptions(kInt64));
    detail::max_pool2d_forward_kernel.get(Device::cpu())(
        x, out.narrow(3, 0, 1), idx.narrow(3, 0, 1), p);
    std::vector<double> want_out;
    std::vector<int64_t> want_idx;
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t col = 0; col < 4; ++col) {
        want_out.push_back(col == 0 ? double(i) : 42.0);
        want_idx.push_back(col == 0 ? i % 3 : 42);
      }
    EXPECT_EQ(values_of(out), want_out);
    EXPECT_EQ(idx.to_vector<int64_t>(), want_idx);
  }
  // Planes of 64 rows on the threads: a write past one plane's last row would land in the next
  // plane's first outputs.
  const Tensor x = make_input(random_values(128, -1, 1, 31), {1, 2, 64, 1}, kFloat32);
  const auto r = detail::max_pool2d_forward(x, p);
  EXPECT_EQ(values_of(r.output), values_of(x));
  std::vector<int64_t> want(128);
  for (int64_t i = 0; i < 128; ++i) want[size_t(i)] = i % 64;
  EXPECT_EQ(r.indices.to_vector<int64_t>(), want);
}

TEST(Pool2d, AdaptiveAvgMatchesStartEndFormula) {
  for (auto [h, w, oh, ow] : {std::array<int64_t, 4>{7, 5, 3, 2}, {6, 6, 3, 3}, {5, 9, 4, 7}, {4, 4, 1, 1}})
    for (DType dtype : {kFloat32, kFloat64})
      for (bool cl : {false, true}) {
        const Shape xs{2, 3, h, w}, os{2, 3, oh, ow};
        const auto x = random_values(numel_of(xs), -1, 1, 5), go = random_values(numel_of(os), -1, 1, 6);
        std::vector<double> out, gi(x.size(), 0.0);
        for (int64_t pl = 0; pl < 6; ++pl)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t h0 = int64_t(std::floor(double(i * h) / oh)), h1 = int64_t(std::ceil(double((i + 1) * h) / oh));
              const int64_t w0 = int64_t(std::floor(double(j * w) / ow)), w1 = int64_t(std::ceil(double((j + 1) * w) / ow));
              double s = 0;
              const double cnt = double((h1 - h0) * (w1 - w0));
              for (int64_t y = h0; y < h1; ++y)
                for (int64_t xx = w0; xx < w1; ++xx) {
                  s += x[size_t((pl * h + y) * w + xx)];
                  gi[size_t((pl * h + y) * w + xx)] += go[size_t((pl * oh + i) * ow + j)] / cnt;
                }
              out.push_back(s / cnt);
            }
        const double tol = dtype == kFloat64 ? 1e-12 : 1e-5;
        const Tensor tx = make_nchw(x, xs, dtype, cl);
        const Tensor o = detail::adaptive_avg_pool2d_forward(tx, {oh, ow});
        ASSERT_EQ(o.sizes(), os);
        EXPECT_TRUE(all_close(o, out, tol, tol));
        EXPECT_TRUE(all_close(detail::adaptive_avg_pool2d_backward(make_nchw(go, os, dtype, cl), tx), gi, tol, tol));
        if (cl) {  // the channels-last loops sum in the plane loops' order: equal to the bit
          const Tensor px = make_nchw(x, xs, dtype, false), pg = make_nchw(go, os, dtype, false);
          EXPECT_EQ(
              o.to(kFloat64).to_vector<double>(),
              detail::adaptive_avg_pool2d_forward(px, {oh, ow}).to(kFloat64).to_vector<double>());
          EXPECT_EQ(
              detail::adaptive_avg_pool2d_backward(make_nchw(go, os, dtype, cl), tx)
                  .to(kFloat64)
                  .to_vector<double>(),
              detail::adaptive_avg_pool2d_backward(pg, px).to(kFloat64).to_vector<double>());
        }
      }
}

TEST(Pool2d, AvgGradientMatchesFiniteDifferences) {
  const PoolCase& k = kPoolCases[3];
  const Shape xs{k.n, k.c, k.h, k.w};
  const auto x = random_values(numel_of(xs), -1, 1, 8);
  auto f = [&](const std::vector<Tensor>& t) { return detail::avg_pool2d_forward(t[0], k.p); };
  const Tensor tx = make_input(x, xs, kFloat64);
  const Tensor out = f({tx});
  const auto wts = random_values(out.numel(), -1, 1, 9);
  const Tensor g = detail::avg_pool2d_backward(make_input(wts, out.sizes(), kFloat64), tx, k.p);
  EXPECT_TRUE(all_close(values_of(g), numeric_grad(f, {x}, {xs}, wts, 0), 1e-6, 1e-7));
}

TEST(Pool2d, ErrorMessages) {
  const Tensor x = zeros({1, 2, 4, 4});
  EXPECT_THROW_MSG(detail::max_pool2d_forward(zeros({4, 4}), pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)),
                   ShapeError, "[max_pool2d] expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape [4, 4]");
  EXPECT_THROW_MSG(detail::max_pool2d_forward(x, pp({2, 2}, {2, 2}, {2, 0}, {1, 1}, false)), ValueError,
                   "[max_pool2d] pad should be at most half of effective kernel size");
  EXPECT_THROW_MSG(detail::avg_pool2d_forward(x, pp({5, 5}, {1, 1}, {0, 0}, {1, 1}, false)), ShapeError,
                   "[avg_pool2d] given input size (2x4x4), calculated output size (2x0x0) is too small");
  EXPECT_THROW_MSG(detail::avg_pool2d_forward(x, pp({2, 2}, {0, 1}, {0, 0}, {1, 1}, false)), ValueError,
                   "[avg_pool2d] stride must be positive, got (0, 1)");
  EXPECT_THROW_MSG(detail::avg_pool2d_forward(x, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false, true, 0)), ValueError,
                   "[avg_pool2d] divisor must be non-zero");
  EXPECT_THROW_MSG(detail::avg_pool2d_forward(zeros({1, 2, 4, 4}, kInt64), pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)),
                   DTypeError, "[avg_pool2d] expected a floating-point input, got int64");
  EXPECT_THROW_MSG(detail::adaptive_avg_pool2d_forward(x, {-1, 2}), ValueError,
                   "[adaptive_avg_pool2d] output size must be non-negative, got (-1, 2)");
  const auto r = detail::max_pool2d_forward(x, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false));
  EXPECT_THROW_MSG(detail::max_pool2d_backward(zeros({1, 2, 3, 3}), x, r.indices, pp({2, 2}, {2, 2}, {0, 0}, {1, 1}, false)),
                   ShapeError, "[max_pool2d_backward] expected grad_out of shape [1, 2, 2, 2], got [1, 2, 3, 3]");
}

}  // namespace
}  // namespace ignis
