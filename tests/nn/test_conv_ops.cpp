// Tests of conv2d and conv_transpose2d (forward and backward) against direct float64 loops
// written here, in float32 and float64, NCHW and channels-last; against central finite
// differences in float64 on small shapes; and every error message.
#include <chrono>
#include <cmath>

#include "nn/nn_test_helpers.h"

namespace ignis {
namespace {

using namespace ignis::testing;
using detail::Conv2dParams;
using detail::ConvTranspose2dParams;
using detail::Pair2;

struct ConvCase {
  const char* name;
  int64_t n, c, h, w, o, kh, kw;
  Pair2 stride, padding, dilation;
  int64_t groups;
  bool bias;
  const char* string_padding = nullptr;  // "same"/"valid" instead of numbers
};

const ConvCase kConvCases[] = {
    {"basic3x3", 2, 4, 7, 6, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
    {"stride2", 2, 3, 9, 8, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true},
    {"dilated", 1, 3, 9, 9, 2, 3, 2, {1, 2}, {2, 1}, {2, 3}, 1, false},
    {"groups", 2, 6, 5, 5, 4, 3, 3, {1, 1}, {0, 1}, {1, 1}, 2, true},
    {"depthwise", 2, 4, 6, 7, 4, 3, 3, {2, 1}, {1, 1}, {1, 1}, 4, true},
    // The direct depthwise kernels (src/cpu/depthwise_conv.cpp): rows of whole vectors and a
    // tail, strides taken through split phases, dilation, padding wider than the window
    // reaches (the scattering input gradient), "same" padding with a longer end.
    {"depthwise_wide", 2, 5, 11, 21, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 5, true},
    {"depthwise_strided_wide", 1, 4, 9, 40, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 4, false},
    {"depthwise_dilated", 2, 3, 13, 19, 3, 5, 3, {2, 3}, {2, 1}, {1, 2}, 3, true},
    {"depthwise_wide_padding", 1, 2, 4, 9, 2, 2, 2, {1, 1}, {3, 2}, {1, 1}, 2, true},
    {"depthwise_same_even", 1, 3, 6, 17, 3, 4, 2, {1, 1}, {0, 0}, {1, 2}, 3, true, "same"},
    {"pointwise", 3, 8, 4, 4, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true},
    {"same_even_kernel", 1, 2, 6, 5, 3, 4, 2, {1, 1}, {0, 0}, {1, 2}, 1, true, "same"},
    {"valid", 1, 2, 6, 5, 3, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, false, "valid"},
};

Conv2dParams params_of(const ConvCase& k) {
  if (k.string_padding)
    return detail::conv2d_params(k.stride, k.string_padding, k.dilation, k.groups, {k.kh, k.kw});
  return detail::conv2d_params(k.stride, k.padding, k.dilation, k.groups);
}

/// Direct convolution and its three gradients for grad_out `go`, in float64.
struct ConvRef {
  Shape out_shape;
  std::vector<double> out, gi, gw, gb;
};
ConvRef ref_conv(const ConvCase& k, const Conv2dParams& p, const std::vector<double>& x,
                 const std::vector<double>& w, const std::vector<double>& b,
                 const std::vector<double>* go) {
  const int64_t cg = k.c / k.groups, og = k.o / k.groups;
  const int64_t ho = (k.h + p.padding[0] + p.padding_end[0] - p.dilation[0] * (k.kh - 1) - 1) /
                         p.stride[0] + 1;
  const int64_t wo = (k.w + p.padding[1] + p.padding_end[1] - p.dilation[1] * (k.kw - 1) - 1) /
                         p.stride[1] + 1;
  ConvRef r;
  r.out_shape = {k.n, k.o, ho, wo};
  r.out.assign(size_t(k.n * k.o * ho * wo), 0.0);
  r.gi.assign(x.size(), 0.0), r.gw.assign(w.size(), 0.0), r.gb.assign(size_t(k.o), 0.0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          const int64_t oi = ((n * k.o + o) * ho + i) * wo + j;
          double s = k.bias ? b[size_t(o)] : 0.0;
          const double g = go ? (*go)[size_t(oi)] : 0.0;
          r.gb[size_t(o)] += g;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t a = 0; a < k.kh; ++a)
              for (int64_t e = 0; e < k.kw; ++e) {
                const int64_t y = i * p.stride[0] - p.padding[0] + a * p.dilation[0];
                const int64_t xx = j * p.stride[1] - p.padding[1] + e * p.dilation[1];
                if (y < 0 || y >= k.h || xx < 0 || xx >= k.w) continue;
                const int64_t ci = (o / og) * cg + c;
                const size_t xi = size_t(((n * k.c + ci) * k.h + y) * k.w + xx);
                const size_t wi = size_t(((o * cg + c) * k.kh + a) * k.kw + e);
                s += x[xi] * w[wi];
                r.gi[xi] += g * w[wi];
                r.gw[wi] += g * x[xi];
              }
          r.out[size_t(oi)] = s;
        }
  return r;
}

struct ConvData {
  std::vector<double> x, w, b, go;
  Shape xs, ws;
};
ConvData conv_data(const ConvCase& k, uint64_t seed) {
  ConvData d;
  d.xs = {k.n, k.c, k.h, k.w};
  d.ws = {k.o, k.c / k.groups, k.kh, k.kw};
  d.x = random_values(numel_of(d.xs), -1, 1, seed);
  d.w = random_values(numel_of(d.ws), -1, 1, seed + 1);
  d.b = random_values(k.o, -1, 1, seed + 2);
  return d;
}

class ConvForward : public ::testing::TestWithParam<std::tuple<ConvCase, DType, bool>> {};

TEST_P(ConvForward, MatchesDirectLoops) {
  const auto& [k, dtype, cl] = GetParam();
  const Conv2dParams p = params_of(k);
  ConvData d = conv_data(k, 11);
  ConvRef probe = ref_conv(k, p, d.x, d.w, d.b, nullptr);
  d.go = random_values(numel_of(probe.out_shape), -1, 1, 99);
  const ConvRef r = ref_conv(k, p, d.x, d.w, d.b, &d.go);
  const double rtol = dtype == kFloat64 ? 1e-12 : 1e-4, atol = dtype == kFloat64 ? 1e-12 : 1e-4;
  const Tensor x = make_nchw(d.x, d.xs, dtype, cl), w = make_input(d.w, d.ws, dtype);
  const Tensor b = k.bias ? make_input(d.b, {k.o}, dtype) : Tensor();
  const Tensor out = detail::conv2d_forward(x, w, b, p);
  ASSERT_EQ(out.sizes(), r.out_shape);
  EXPECT_EQ(detail::is_channels_last(out), cl);
  EXPECT_TRUE(all_close(out, r.out, rtol, atol));
  const Tensor go = make_nchw(d.go, r.out_shape, dtype, cl);
  const auto g = detail::conv2d_backward(go, x, w, p, {true, true, k.bias});
  EXPECT_EQ(detail::is_channels_last(g.input), cl);
  EXPECT_TRUE(all_close(g.input, r.gi, rtol, atol)) << "grad_input";
  EXPECT_TRUE(all_close(g.weight, r.gw, rtol, atol)) << "grad_weight";
  if (k.bias) EXPECT_TRUE(all_close(g.bias, r.gb, rtol, atol)) << "grad_bias";
  // Only some gradients asked for: the others stay undefined.
  const auto only_w = detail::conv2d_backward(go, x, w, p, {false, true, false});
  EXPECT_FALSE(only_w.input.defined());
  EXPECT_FALSE(only_w.bias.defined());
  EXPECT_TRUE(all_close(only_w.weight, r.gw, rtol, atol));
}

std::string conv_name(const ::testing::TestParamInfo<std::tuple<ConvCase, DType, bool>>& i) {
  return std::string(std::get<0>(i.param).name) + "_" + dtype_name(std::get<1>(i.param)) +
         (std::get<2>(i.param) ? "_channels_last" : "_nchw");
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvForward,
                         ::testing::Combine(::testing::ValuesIn(kConvCases),
                                            ::testing::Values(kFloat32, kFloat64),
                                            ::testing::Bool()),
                         conv_name);

TEST(Conv2d, BFloat16ComputesInFloat32) {
  const ConvCase& k = kConvCases[0];
  const Conv2dParams p = params_of(k);
  const ConvData d = conv_data(k, 5);
  const auto xr = round_to(d.x, kBFloat16), wr = round_to(d.w, kBFloat16),
             br = round_to(d.b, kBFloat16);
  const ConvRef r = ref_conv(k, p, xr, wr, br, nullptr);
  const Tensor out = detail::conv2d_forward(make_input(xr, d.xs, kBFloat16),
                                            make_input(wr, d.ws, kBFloat16),
                                            make_input(br, {k.o}, kBFloat16), p);
  EXPECT_EQ(out.dtype(), kBFloat16);
  EXPECT_TRUE(all_close(out, r.out, 1e-2, 2e-2));
}

// bfloat16 forward and backward (oneDNN's bf16 kernels where it has them, the float32
// fallback elsewhere) against float64 loops on the bf16-rounded inputs. Each result is
// rounded once, so it lies within a bf16 rounding step of the float64 value; the tolerance is
// one step at the case's largest magnitude. "wide" (32 output channels) takes the
// channels-last-by-default path.
TEST(Conv2d, BFloat16ForwardAndBackwardMatchFloat64OnRoundedInputs) {
  std::vector<ConvCase> cases(std::begin(kConvCases), std::end(kConvCases));
  cases.push_back({"wide", 2, 8, 6, 6, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true});
  auto close = [](const Tensor& t, const std::vector<double>& ref) {
    double m = 0;
    for (double v : ref) m = std::max(m, std::abs(v));
    return all_close(t, ref, 1.0 / 128, m / 128);
  };
  for (const ConvCase& k : cases) {
    for (bool cl : {false, true}) {
      const Conv2dParams p = params_of(k);
      const ConvData d = conv_data(k, 17);
      const auto xr = round_to(d.x, kBFloat16), wr = round_to(d.w, kBFloat16),
                 br = round_to(d.b, kBFloat16);
      const ConvRef probe = ref_conv(k, p, xr, wr, br, nullptr);
      const auto gor =
          round_to(random_values(numel_of(probe.out_shape), -1, 1, 23), kBFloat16);
      const ConvRef r = ref_conv(k, p, xr, wr, br, &gor);
      const Tensor x = make_nchw(xr, d.xs, kBFloat16, cl), w = make_input(wr, d.ws, kBFloat16);
      const Tensor b = k.bias ? make_input(br, {k.o}, kBFloat16) : Tensor();
      const Tensor out = detail::conv2d_forward(x, w, b, p);
      const auto g = detail::conv2d_backward(make_nchw(gor, r.out_shape, kBFloat16, cl), x, w, p,
                                             {true, true, k.bias});
      const std::string what = std::string(k.name) + (cl ? " channels-last" : " nchw");
      ASSERT_EQ(out.dtype(), kBFloat16) << what;
      EXPECT_TRUE(close(out, r.out)) << what << " forward";
      EXPECT_TRUE(close(g.input, r.gi)) << what << " grad_input";
      EXPECT_TRUE(close(g.weight, r.gw)) << what << " grad_weight";
      if (k.bias) EXPECT_TRUE(close(g.bias, r.gb)) << what << " grad_bias";
    }
  }
}

// Note [Winograd convolutions] (src/cpu/dnnl_conv.cpp): float32 3x3 stride-1 convolutions of
// 64 or more channels take oneDNN's Winograd kernels where the CPU has them, forward and input
// gradient, in NCHW and channels-last, against the float64 loops with the switch on and off;
// with the switch on, results differ from the direct ones where AVX-512 (and so Winograd) is
// there, which shows the switch is what chose the path.
TEST(Conv2d, WinogradForwardAndInputGradientMatchFloat64) {
  // The third case has more images than one call takes (winograd_chunk: 400 KB of input an
  // image, 4 MB a call), so it runs as a chunk of 10 and a tail of 1.
  const ConvCase cases[] = {
      {"wino64", 2, 64, 12, 12, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"wino_odd", 1, 96, 9, 7, 80, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false},
      {"wino_chunks", 11, 64, 40, 40, 64, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
      // ResNet-18's third stage on 16x16 images: 4x4 maps, one Winograd tile each.
      {"wino_4x4", 4, 256, 4, 4, 256, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false}};
  const bool winograd_here = __builtin_cpu_supports("avx512f");
  for (const ConvCase& k : cases) {
    const Conv2dParams p = params_of(k);
    ConvData d = conv_data(k, 31);
    for (double& v : d.w) v *= 0.05;  // outputs of order 1, as an initialised layer gives
    const ConvRef probe = ref_conv(k, p, d.x, d.w, d.b, nullptr);
    const auto go = random_values(numel_of(probe.out_shape), -1, 1, 37);
    const ConvRef r = ref_conv(k, p, d.x, d.w, d.b, &go);
    for (bool cl : {false, true}) {
      const Tensor x = make_nchw(d.x, d.xs, kFloat32, cl), w = make_input(d.w, d.ws, kFloat32);
      const Tensor b = k.bias ? make_input(d.b, {k.o}, kFloat32) : Tensor();
      const Tensor g = make_nchw(go, r.out_shape, kFloat32, cl);
      Tensor out[2], gi[2];
      for (bool allow : {true, false}) {
        set_cpu_winograd(allow);
        const std::string what =
            fmt::format("{} {} winograd {}", k.name, cl ? "channels-last" : "nchw", allow);
        out[allow] = detail::conv2d_forward(x, w, b, p);
        gi[allow] = detail::conv2d_backward(g, x, w, p, {true, false, false}).input;
        EXPECT_TRUE(all_close(out[allow], r.out, 1e-5, 1e-5)) << what << " forward";
        EXPECT_TRUE(all_close(gi[allow], r.gi, 1e-5, 1e-5)) << what << " grad_input";
      }
      set_cpu_winograd(true);
      if (winograd_here) {
        EXPECT_FALSE(equal(out[1], out[0])) << k.name << " forward ran direct with Winograd on";
        EXPECT_FALSE(equal(gi[1], gi[0])) << k.name << " grad_input ran direct with Winograd on";
      }
    }
  }
}

// bf16 convolutions of 256 or more channels take the Winograd kernels too, in float32 (bf16
// widened exactly, results rounded to bf16 once): against float64 loops on the bf16-rounded
// operands at bf16's precision, and differing from oneDNN's bf16 kernels (switch off) where
// AVX-512 is there. With a bias they stay direct.
TEST(Conv2d, WinogradTakesBFloat16From256Channels) {
  const ConvCase k{"wino_bf16", 2, 256, 6, 7, 256, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, false};
  const bool winograd_here = __builtin_cpu_supports("avx512f");
  const Conv2dParams p = params_of(k);
  ConvData d = conv_data(k, 41);
  for (double& v : d.w) v *= 0.03;
  const auto xr = round_to(d.x, kBFloat16), wr = round_to(d.w, kBFloat16);
  const ConvRef probe = ref_conv(k, p, xr, wr, d.b, nullptr);
  const auto go = round_to(random_values(numel_of(probe.out_shape), -1, 1, 43), kBFloat16);
  const ConvRef r = ref_conv(k, p, xr, wr, d.b, &go);
  auto close = [](const Tensor& t, const std::vector<double>& ref) {
    double m = 0;
    for (double v : ref) m = std::max(m, std::abs(v));
    return all_close(t, ref, 1.0 / 128, m / 128);
  };
  for (bool cl : {false, true}) {
    const Tensor x = make_nchw(xr, d.xs, kBFloat16, cl), w = make_input(wr, d.ws, kBFloat16);
    const Tensor g = make_nchw(go, r.out_shape, kBFloat16, cl);
    Tensor out[2], gi[2];
    for (bool allow : {true, false}) {
      set_cpu_winograd(allow);
      const std::string what = fmt::format("{} winograd {}", cl ? "channels-last" : "nchw", allow);
      out[allow] = detail::conv2d_forward(x, w, Tensor(), p);
      gi[allow] = detail::conv2d_backward(g, x, w, p, {true, false, false}).input;
      ASSERT_EQ(out[allow].dtype(), kBFloat16) << what;
      EXPECT_TRUE(close(out[allow], r.out)) << what << " forward";
      EXPECT_TRUE(close(gi[allow], r.gi)) << what << " grad_input";
    }
    set_cpu_winograd(true);
    if (winograd_here) {
      EXPECT_FALSE(equal(out[1], out[0])) << "forward ran bf16 kernels with Winograd on";
      EXPECT_FALSE(equal(gi[1], gi[0])) << "grad_input ran bf16 kernels with Winograd on";
    }
    // With a bias: direct, the same as with the switch off.
    const Tensor b = make_input(round_to(d.b, kBFloat16), {k.o}, kBFloat16);
    const Tensor with_bias = detail::conv2d_forward(x, w, b, p);
    set_cpu_winograd(false);
    EXPECT_TRUE(equal(with_bias, detail::conv2d_forward(x, w, b, p)));
    set_cpu_winograd(true);
  }
}

TEST(Conv2d, GradientsMatchFiniteDifferences) {
  for (const ConvCase& k : {kConvCases[2], kConvCases[3], kConvCases[6]}) {
    const Conv2dParams p = params_of(k);
    ConvCase small = k;
    const ConvData d = conv_data(small, 3);
    const Shape bs{k.o};
    auto f = [&](const std::vector<Tensor>& t) { return detail::conv2d_forward(t[0], t[1], t[2], p); };
    const Tensor x = make_input(d.x, d.xs, kFloat64), w = make_input(d.w, d.ws, kFloat64),
                 b = make_input(d.b, bs, kFloat64);
    const Tensor out = f({x, w, b});
    const auto weights = random_values(out.numel(), -1, 1, 17);
    const auto g = detail::conv2d_backward(make_input(weights, out.sizes(), kFloat64), x, w, p);
    const std::vector<Shape> shapes{d.xs, d.ws, bs};
    EXPECT_TRUE(all_close(values_of(g.input), numeric_grad(f, {d.x, d.w, d.b}, shapes, weights, 0), 1e-6, 1e-7)) << k.name;
    EXPECT_TRUE(all_close(values_of(g.weight), numeric_grad(f, {d.x, d.w, d.b}, shapes, weights, 1), 1e-6, 1e-7)) << k.name;
    EXPECT_TRUE(all_close(values_of(g.bias), numeric_grad(f, {d.x, d.w, d.b}, shapes, weights, 2), 1e-6, 1e-7)) << k.name;
  }
}

// ---------------------------------------------------------------------------------------------
// Transposed convolution: out[n, g*Cog + oc, h*s - p + a*d, …] += x[n, ci, h, w] * w[ci, oc, a, e].

struct TCase {
  const char* name;
  int64_t n, cin, h, w, cout, kh, kw;
  ConvTranspose2dParams p;
};
const TCase kTCases[] = {
    {"basic", 2, 3, 4, 5, 4, 3, 3, {{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1}},
    {"stride2_outpad", 2, 4, 3, 4, 3, 3, 3, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}},
    {"stride2_outpad_nopad", 1, 2, 3, 3, 2, 2, 3, {{2, 3}, {0, 0}, {1, 2}, {1, 1}, 1}},
    {"groups_dilated", 2, 4, 4, 3, 6, 2, 3, {{2, 1}, {1, 0}, {0, 0}, {2, 1}, 2}},
};

struct TRef {
  Shape out_shape;
  std::vector<double> out, gi, gw, gb;
};
TRef ref_tconv(const TCase& k, const std::vector<double>& x, const std::vector<double>& w,
               const std::vector<double>& b, const std::vector<double>* go) {
  const auto& p = k.p;
  const int64_t ho = (k.h - 1) * p.stride[0] - 2 * p.padding[0] + p.dilation[0] * (k.kh - 1) +
                     p.output_padding[0] + 1;
  const int64_t wo = (k.w - 1) * p.stride[1] - 2 * p.padding[1] + p.dilation[1] * (k.kw - 1) +
                     p.output_padding[1] + 1;
  const int64_t cig = k.cin / p.groups, cog = k.cout / p.groups;
  TRef r;
  r.out_shape = {k.n, k.cout, ho, wo};
  r.out.assign(size_t(numel_of(r.out_shape)), 0.0);
  r.gi.assign(x.size(), 0.0), r.gw.assign(w.size(), 0.0), r.gb.assign(size_t(k.cout), 0.0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t c = 0; c < k.cout; ++c)
      for (int64_t i = 0; i < ho * wo; ++i) {
        const size_t oi = size_t((n * k.cout + c) * ho * wo + i);
        r.out[oi] = b.empty() ? 0.0 : b[size_t(c)];
        if (go) r.gb[size_t(c)] += (*go)[oi];
      }
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t ci = 0; ci < k.cin; ++ci)
      for (int64_t y = 0; y < k.h; ++y)
        for (int64_t xx = 0; xx < k.w; ++xx)
          for (int64_t oc = 0; oc < cog; ++oc)
            for (int64_t a = 0; a < k.kh; ++a)
              for (int64_t e = 0; e < k.kw; ++e) {
                const int64_t oy = y * p.stride[0] - p.padding[0] + a * p.dilation[0];
                const int64_t ox = xx * p.stride[1] - p.padding[1] + e * p.dilation[1];
                if (oy < 0 || oy >= ho || ox < 0 || ox >= wo) continue;
                const int64_t c = (ci / cig) * cog + oc;
                const size_t oi = size_t(((n * k.cout + c) * ho + oy) * wo + ox);
                const size_t xi = size_t(((n * k.cin + ci) * k.h + y) * k.w + xx);
                const size_t wi = size_t(((ci * cog + oc) * k.kh + a) * k.kw + e);
                r.out[oi] += x[xi] * w[wi];
                if (go) r.gi[xi] += (*go)[oi] * w[wi], r.gw[wi] += (*go)[oi] * x[xi];
              }
  return r;
}

TEST(ConvTranspose2d, MatchesScatterLoops) {
  for (const TCase& k : kTCases)
    for (DType dtype : {kFloat32, kFloat64})
      for (bool cl : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} {}", k.name, dtype_name(dtype), cl ? "channels_last" : "nchw"));
        const Shape xs{k.n, k.cin, k.h, k.w}, ws{k.cin, k.cout / k.p.groups, k.kh, k.kw};
        const auto x = random_values(numel_of(xs), -1, 1, 1), w = random_values(numel_of(ws), -1, 1, 2),
                   b = random_values(k.cout, -1, 1, 3);
        const TRef probe = ref_tconv(k, x, w, b, nullptr);
        const auto go = random_values(numel_of(probe.out_shape), -1, 1, 4);
        const TRef r = ref_tconv(k, x, w, b, &go);
        const double tol = dtype == kFloat64 ? 1e-12 : 1e-4;
        const Tensor tx = make_nchw(x, xs, dtype, cl), tw = make_input(w, ws, dtype);
        const Tensor out = detail::conv_transpose2d_forward(tx, tw, make_input(b, {k.cout}, dtype), k.p);
        ASSERT_EQ(out.sizes(), r.out_shape);
        EXPECT_EQ(detail::is_channels_last(out), cl);
        EXPECT_TRUE(all_close(out, r.out, tol, tol));
        const auto g = detail::conv_transpose2d_backward(make_nchw(go, r.out_shape, dtype, cl), tx, tw, k.p);
        EXPECT_TRUE(all_close(g.input, r.gi, tol, tol)) << "grad_input";
        EXPECT_TRUE(all_close(g.weight, r.gw, tol, tol)) << "grad_weight";
        EXPECT_TRUE(all_close(g.bias, r.gb, tol, tol)) << "grad_bias";
      }
}

TEST(ConvTranspose2d, GradientsMatchFiniteDifferences) {
  const TCase& k = kTCases[3];
  const Shape xs{k.n, k.cin, k.h, k.w}, ws{k.cin, k.cout / k.p.groups, k.kh, k.kw}, bs{k.cout};
  const auto x = random_values(numel_of(xs), -1, 1, 7), w = random_values(numel_of(ws), -1, 1, 8),
             b = random_values(k.cout, -1, 1, 9);
  auto f = [&](const std::vector<Tensor>& t) { return detail::conv_transpose2d_forward(t[0], t[1], t[2], k.p); };
  const Tensor tx = make_input(x, xs, kFloat64), tw = make_input(w, ws, kFloat64);
  const Tensor out = f({tx, tw, make_input(b, bs, kFloat64)});
  const auto weights = random_values(out.numel(), -1, 1, 10);
  const auto g = detail::conv_transpose2d_backward(make_input(weights, out.sizes(), kFloat64), tx, tw, k.p);
  const std::vector<Shape> shapes{xs, ws, bs};
  EXPECT_TRUE(all_close(values_of(g.input), numeric_grad(f, {x, w, b}, shapes, weights, 0), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(values_of(g.weight), numeric_grad(f, {x, w, b}, shapes, weights, 1), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(values_of(g.bias), numeric_grad(f, {x, w, b}, shapes, weights, 2), 1e-6, 1e-7));
}

// ---------------------------------------------------------------------------------------------
// Errors.

TEST(Conv2d, ErrorMessages) {
  const Tensor x = zeros({1, 4, 5, 5}), w = zeros({6, 4, 3, 3});
  const Conv2dParams p = detail::conv2d_params({1, 1}, Pair2{0, 0}, {1, 1}, 1);
  using detail::conv2d_forward;
  EXPECT_THROW_MSG(conv2d_forward(zeros({4, 5, 5}), w, Tensor(), p), ShapeError,
                   "[conv2d] expected a 4-D input [N, C, H, W], got shape [4, 5, 5]");
  EXPECT_THROW_MSG(conv2d_forward(zeros({1, 3, 5, 5}), w, Tensor(), p), ShapeError,
                   "[conv2d] input [1, 3, 5, 5] has 3 channels, but weight [6, 4, 3, 3] with groups = 1 expects 4");
  EXPECT_THROW_MSG(conv2d_forward(x, w, Tensor(), detail::conv2d_params({1, 1}, Pair2{0, 0}, {1, 1}, 4)),
                   ValueError, "[conv2d] groups = 4 must divide both the input channels (4) and the output channels (6)");
  EXPECT_THROW_MSG(conv2d_forward(x, zeros({6, 4, 7, 3}), Tensor(), p), ShapeError,
                   "[conv2d] kernel size 7x3 (dilated 7) is larger than the padded input 5x5");
  EXPECT_THROW_MSG(conv2d_forward(x, w, zeros({5}), p), ShapeError, "[conv2d] expected bias of shape [6], got [5]");
  EXPECT_THROW_MSG(conv2d_forward(x, zeros({6, 4, 3}), Tensor(), p), ShapeError,
                   "[conv2d] expected a 4-D weight, got shape [6, 4, 3]");
  EXPECT_THROW_MSG(conv2d_forward(x, zeros({6, 4, 3, 3}, kFloat64), Tensor(), p), DTypeError,
                   "[conv2d] expected weight to have the input's dtype float32, got float64");
  EXPECT_THROW_MSG(conv2d_forward(zeros({1, 4, 5, 5}, kInt64), zeros({6, 4, 3, 3}, kInt64), Tensor(), p),
                   DTypeError, "[conv2d] expected a floating-point input, got int64");
  EXPECT_THROW_MSG(conv2d_forward(x, w, Tensor(), detail::conv2d_params({0, 1}, Pair2{0, 0}, {1, 1}, 1)),
                   ValueError, "[conv2d] stride must be positive, got (0, 1)");
  EXPECT_THROW_MSG(detail::conv2d_params({2, 2}, "same", {1, 1}, 1, {3, 3}), ValueError,
                   "[conv2d] padding=\"same\" is not supported for strided convolutions");
  EXPECT_THROW_MSG(detail::conv2d_params({1, 1}, "full", {1, 1}, 1, {3, 3}), ValueError,
                   "[conv2d] padding must be \"valid\", \"same\" or numbers, got \"full\"");
  EXPECT_THROW_MSG(detail::conv2d_backward(zeros({1, 6, 2, 2}), x, w, p), ShapeError,
                   "[conv2d] expected grad_out of shape [1, 6, 3, 3], got [1, 6, 2, 2]");
  ConvTranspose2dParams tp;
  tp.output_padding = {1, 1};
  EXPECT_THROW_MSG(detail::conv_transpose2d_forward(x, zeros({4, 2, 3, 3}), Tensor(), tp), ValueError,
                   "[conv_transpose2d] output padding must be smaller than either stride or dilation");
  EXPECT_THROW_MSG(detail::conv_transpose2d_forward(x, zeros({3, 2, 3, 3}), Tensor(), {}), ShapeError,
                   "[conv_transpose2d] input [1, 4, 5, 5] has 4 channels, but weight [3, 2, 3, 3] expects 3");
}

// A timing printout for the report (not a test of speed): ResNet-18's 3x3 64-channel conv.
TEST(Conv2d, DISABLED_Timing) {
  for (bool cl : {false, true}) {
    const Tensor x = make_nchw(random_values(32 * 64 * 32 * 32, -1, 1, 1), {32, 64, 32, 32}, kFloat32, cl);
    const Tensor w = randn({64, 64, 3, 3});
    const Conv2dParams p = detail::conv2d_params({1, 1}, Pair2{1, 1}, {1, 1}, 1);
    Tensor out = detail::conv2d_forward(x, w, Tensor(), p);
    const double flops = 2.0 * 32 * 64 * 32 * 32 * 64 * 9;
    auto time = [&](auto&& fn) {
      fn();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) fn();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 10;
    };
    const double tf = time([&] { out = detail::conv2d_forward(x, w, Tensor(), p); });
    const double ti = time([&] { detail::conv2d_backward(out, x, w, p, {true, false, false}); });
    const double tw = time([&] { detail::conv2d_backward(out, x, w, p, {false, true, false}); });
    std::printf("%s: forward %.2f ms (%.0f GFLOP/s), backward input %.2f ms (%.0f), backward weight %.2f ms (%.0f)\n",
                cl ? "channels-last" : "NCHW", tf * 1e3, flops / tf * 1e-9, ti * 1e3, flops / ti * 1e-9,
                tw * 1e3, flops / tw * 1e-9);
  }
}

}  // namespace
}  // namespace ignis
