// nn::functional::pad and interpolate against loops written from PyTorch's definitions, and
// their gradients by finite differences.
#include <cmath>

#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;
namespace F = ignis::nn::functional;

TEST(Pad, ModesAgainstIndexArithmetic) {
  Tensor x = random_tensor({2, 3, 4, 5}, -1, 1, 1);
  auto xv = values_of(x);
  const int64_t l = 2, r = 1, t = 1, b = 3;
  for (std::string mode : {"constant", "reflect", "replicate"}) {
    SCOPED_TRACE(mode);
    Tensor y = F::pad(x, {l, r, t, b}, mode, 0.5);
    ASSERT_EQ(y.sizes(), (Shape{2, 3, 4 + t + b, 5 + l + r}));
    auto yv = values_of(y);
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t i = 0; i < 4 + t + b; ++i)
        for (int64_t j = 0; j < 5 + l + r; ++j) {
          int64_t si = i - t, sj = j - l;
          double want;
          if (mode == "constant") {
            want = (si < 0 || si >= 4 || sj < 0 || sj >= 5) ? 0.5 : xv[size_t(p * 20 + si * 5 + sj)];
          } else {
            auto fix = [&](int64_t v, int64_t n) {
              if (mode == "reflect") return v < 0 ? -v : (v >= n ? 2 * (n - 1) - v : v);
              return std::clamp<int64_t>(v, 0, n - 1);
            };
            want = xv[size_t(p * 20 + fix(si, 4) * 5 + fix(sj, 5))];
          }
          ASSERT_EQ(yv[size_t((p * (4 + t + b) + i) * (5 + l + r) + j)], want) << i << "," << j;
        }
  }
  EXPECT_EQ(F::pad(x, {-1, -2}).sizes(), (Shape{2, 3, 4, 2}));  // negative pads crop
  EXPECT_THROW_MSG(F::pad(x, {5, 0}, "reflect"), ValueError, "[pad] reflect padding of 5 and 0");
  EXPECT_THROW_MSG(F::pad(x, {1}), ValueError, "[pad] expected an even number of pads");
  const std::string report = autograd::gradcheck([](const auto& v) { return F::pad(v[0], {1, 2, 2, 1}, "reflect"); }, {x});
  EXPECT_TRUE(report.empty()) << report;
}

TEST(Interpolate, NearestAndBilinearFollowPyTorchFormulas) {
  Tensor x = random_tensor({1, 2, 5, 4}, -1, 1, 2);
  auto xv = values_of(x);
  auto at = [&](int64_t c, int64_t i, int64_t j) { return xv[size_t((c * 5 + i) * 4 + j)]; };
  // nearest, size 7 x 3: src = floor(dst * in / out)
  Tensor n = F::interpolate(x, {.size = Size2{7, 3}});
  auto nv = values_of(n);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_EQ(nv[size_t((c * 7 + i) * 3 + j)], at(c, int64_t(std::floor(i * 5.0 / 7)), int64_t(std::floor(j * 4.0 / 3))));
  for (bool corners : {false, true}) {
    SCOPED_TRACE(corners);
    Tensor y = F::interpolate(x, {.size = Size2{8, 6}, .mode = "bilinear", .align_corners = corners});
    auto yv = values_of(y);
    auto src = [&](int64_t d, int64_t in, int64_t out) {
      return corners ? double(d) * (in - 1) / (out - 1) : std::max((d + 0.5) * in / out - 0.5, 0.0);
    };
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < 8; ++i)
        for (int64_t j = 0; j < 6; ++j) {
          const double si = src(i, 5, 8), sj = src(j, 4, 6);
          const int64_t i0 = std::min<int64_t>(int64_t(si), 4), j0 = std::min<int64_t>(int64_t(sj), 3);
          const int64_t i1 = std::min<int64_t>(i0 + 1, 4), j1 = std::min<int64_t>(j0 + 1, 3);
          const double a = si - i0, b = sj - j0;
          const double want = (1 - a) * ((1 - b) * at(c, i0, j0) + b * at(c, i0, j1)) +
                              a * ((1 - b) * at(c, i1, j0) + b * at(c, i1, j1));
          EXPECT_NEAR(yv[size_t((c * 8 + i) * 6 + j)], want, 1e-12);
        }
  }
  EXPECT_EQ(F::interpolate(x, {.scale_factor = 2.0}).sizes(), (Shape{1, 2, 10, 8}));
  EXPECT_THROW_MSG(F::interpolate(x, {}), ValueError, "[interpolate] give exactly one of size and scale_factor");
  EXPECT_THROW_MSG(F::interpolate(x, {.size = Size2{2, 2}, .mode = "cubic"}), ValueError, "mode must be");
  const std::string report = autograd::gradcheck(
      [](const auto& v) { return F::interpolate(v[0], {.size = Size2{7, 6}, .mode = "bilinear"}); }, {x});
  EXPECT_TRUE(report.empty()) << report;
}

// The resampling kernels (src/cpu/resample.cpp) in both layouts and dtypes: float32 and
// channels-last results against the float64 NCHW ones (which the tests above check against
// the formulas), and gradients by finite differences in float64, NCHW and channels-last.
namespace {
const MemoryFormat kCL = MemoryFormat::channels_last;

/// fn(x) and x's gradient under a fixed upstream gradient, as float64 values.
std::pair<std::vector<double>, std::vector<double>> value_and_grad(
    const std::function<Tensor(const Tensor&)>& fn, const Tensor& x0) {
  Tensor x = x0.detach().requires_grad_();
  const Tensor y = fn(x);
  (y * random_tensor(y.sizes(), -1, 1, 77).to(y.dtype())).sum().backward();
  return {values_of(y), values_of(x.grad())};
}

void expect_layouts_and_dtypes_agree(
    const std::string& what, const std::function<Tensor(const Tensor&)>& fn, const Shape& shape) {
  SCOPED_TRACE(what);
  const Tensor x = random_tensor(shape, -1, 1, 5);
  const auto ref = value_and_grad(fn, x);
  for (DType dtype : {kFloat32, kFloat64})
    for (bool cl : {false, true}) {
      if (cl && shape.size() != 4) continue;
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (cl ? " channels-last" : " NCHW"));
      const Tensor xi = cl ? x.to(dtype).contiguous(kCL) : x.to(dtype);
      const Tensor y = fn(xi);
      EXPECT_EQ(y.dtype(), dtype);
      if (shape.size() == 4) EXPECT_EQ(y.is_contiguous(kCL), cl);
      const auto got = value_and_grad(fn, xi);
      const double tol = dtype == kFloat32 ? 1e-5 : 1e-12;
      EXPECT_TRUE(all_close(got.first, ref.first, tol, tol));
      EXPECT_TRUE(all_close(got.second, ref.second, tol, tol));
    }
  expect_gradcheck(what + " NCHW", [&](const auto& v) { return fn(v[0]); }, {x});
  if (shape.size() == 4)  // gradcheck perturbs a contiguous input: converted inside
    expect_gradcheck(
        what + " channels-last", [&](const auto& v) { return fn(v[0].contiguous(kCL)); }, {x});
}
}  // namespace

TEST(Interpolate, NearestPicksPyTorchsSourcePixel) {
  // PyTorch's nearest_idx: an axis that keeps its size is copied, one that doubles halves the
  // index, any other steps by in / out in float (1 / scale_factor when a scale is given), so
  // floor() lands on the pixel float arithmetic gives, not the exact quotient: 26 -> 46 takes
  // pixel 13 for column 23 (23 * 26 / 46 = 12.9999... in float it rounds up to 13.0).
  auto pytorch_index = [](int64_t i, int64_t in, int64_t out, float step) -> int64_t {
    if (out == in) return i;
    if (out == 2 * in) return i / 2;
    return std::min<int64_t>(int64_t(std::floor(float(i) * step)), in - 1);
  };
  for (int64_t in = 1; in <= 40; ++in) {
    const Tensor x = arange(0, in, 1, kFloat32).reshape({1, 1, 1, in});
    for (int64_t out = 1; out <= 90; ++out) {
      const auto got = values_of(F::interpolate(x, {.size = Size2{1, out}}));
      for (int64_t i = 0; i < out; ++i)
        ASSERT_EQ(got[size_t(i)], double(pytorch_index(i, in, out, float(in) / float(out))))
            << in << " -> " << out << " column " << i;
    }
  }
  const Tensor x26 = arange(0, 26, 1, kFloat32).reshape({1, 1, 1, 26});
  EXPECT_EQ(values_of(F::interpolate(x26, {.size = Size2{1, 46}}))[23], 13.0);
  const Tensor x2 = arange(0, 2, 1, kFloat32).reshape({1, 1, 1, 2});
  EXPECT_EQ(values_of(F::interpolate(x2, {.size = Size2{1, 98}}))[49], 1.0);
  // With a scale factor the step is float(1 / scale): 7 * 1.7 -> 11 columns.
  const Tensor x7 = arange(0, 7, 1, kFloat32).reshape({1, 1, 1, 7});
  const auto scaled = values_of(F::interpolate(x7, {.scale_factor = 1.7}));
  ASSERT_EQ(scaled.size(), size_t(11));  // the one-pixel height stays: floor(1.7) = 1
  for (int64_t i = 0; i < 11; ++i)
    EXPECT_EQ(scaled[size_t(i)], double(pytorch_index(i, 7, 11, float(1.0 / 1.7))));
}

TEST(Interpolate, BilinearCopiesAnAxisThatKeepsItsSize) {
  // A scale factor whose size rounds back to the input's (5 * 1.1 -> 5): PyTorch copies that
  // axis instead of stepping by 1 / 1.1.
  const Tensor x = random_tensor({1, 2, 3, 5}, -1, 1, 9);
  const Tensor y = F::interpolate(x, {.scale_factor = 1.1, .mode = "bilinear"});
  ASSERT_EQ(y.sizes(), x.sizes());
  EXPECT_EQ(values_of(y), values_of(x));
}

TEST(Pad, KernelLayoutsDtypesAndGradients) {
  for (std::string mode : {"constant", "reflect", "replicate"}) {
    expect_layouts_and_dtypes_agree(
        mode + " 2-D",
        [&](const Tensor& x) {
          return F::pad(x, {2, 1, 3, 2}, mode, -0.25);
        },
        {2, 5, 6, 7});
    // Crop one side, pad the other; pad the last dim only; tensors of 3 and 2 dims.
    expect_layouts_and_dtypes_agree(
        mode + " crop",
        [&](const Tensor& x) {
          return F::pad(x, {-2, 3, 1, -1}, mode);
        },
        {1, 3, 5, 6});
    expect_layouts_and_dtypes_agree(
        mode + " last dim",
        [&](const Tensor& x) {
          return F::pad(x, {1, 2}, mode, 2.0);
        },
        {2, 3, 4, 5});
    expect_layouts_and_dtypes_agree(
        mode + " 3 dims",
        [&](const Tensor& x) {
          return F::pad(x, {1, 2, 2, 1}, mode);
        },
        {3, 4, 5});
    expect_layouts_and_dtypes_agree(
        mode + " 2 dims",
        [&](const Tensor& x) {
          return F::pad(x, {3, 0}, mode);
        },
        {4, 5});
  }
  // Each padded value against the index arithmetic of the test above, on a channels-last
  // float32 input with more channels than one vector.
  const Tensor x = random_tensor({2, 19, 4, 5}, -1, 1, 8).to(kFloat32);
  const auto xv = values_of(x);
  const auto yv = values_of(F::pad(x.contiguous(kCL), {2, 1, 1, 2}, "reflect"));
  for (int64_t p = 0; p < 2 * 19; ++p)
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 8; ++j) {
        auto fix = [](int64_t v, int64_t n) { return v < 0 ? -v : (v >= n ? 2 * (n - 1) - v : v); };
        ASSERT_EQ(
            yv[size_t((p * 7 + i) * 8 + j)],
            xv[size_t(p * 20 + fix(i - 1, 4) * 5 + fix(j - 2, 5))]);
      }
}

TEST(Pad, CompositionMatchesTheKernel) {
  // Integer tensors and tensors of more than 4 dims take the composition of index_select and
  // cat (pad_dim); its values equal the kernel's on the same data, for every mode, with crops.
  const Tensor x = random_tensor({2, 3, 4, 5}, -100, 100, 14);
  const Tensor xi = x.to(kInt64);
  for (std::string mode : {"constant", "reflect", "replicate"}) {
    SCOPED_TRACE(mode);
    const Shape pads{2, -1, 3, 1};
    const Tensor kernel = F::pad(xi.to(kFloat64), pads, mode, 7);
    EXPECT_EQ(values_of(F::pad(xi, pads, mode, 7)), values_of(kernel));
    const Tensor five = F::pad(x.unsqueeze(0), pads, mode, 7);  // 5 dims: the composition
    EXPECT_EQ(values_of(five), values_of(F::pad(x, pads, mode, 7)));
  }
  const std::string report = autograd::gradcheck(
      [](const auto& v) { return F::pad(v[0].unsqueeze(0), {1, 2, 2, 1}, "replicate"); }, {x});
  EXPECT_TRUE(report.empty()) << report;
}

TEST(Resample, Bf16AndHalfGoThroughFloat32) {
  // 16-bit inputs go through float32: padding moves their values exactly, bilinear
  // interpolation rounds the float32 result once; both keep the dtype, the layout and the
  // gradient (checked against the float32 path).
  const Tensor x = random_tensor({2, 9, 5, 6}, -1, 1, 12);
  for (DType t : {kBFloat16, kFloat16})
    for (bool cl : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (cl ? " channels-last" : " NCHW"));
      const Tensor x16 = cl ? x.to(t).contiguous(kCL) : x.to(t);
      const Tensor x32 = x16.to(kFloat32);
      const auto fns = {
          std::function<Tensor(const Tensor&)>([](const Tensor& v) {
            return F::pad(v, {2, 1, 1, 3}, "reflect");
          }),
          std::function<Tensor(const Tensor&)>([](const Tensor& v) {
            return F::interpolate(v, {.size = Size2{9, 11}, .mode = "bilinear"});
          })};
      for (const auto& fn : fns) {
        const Tensor y = fn(x16);
        EXPECT_EQ(y.dtype(), t);
        EXPECT_EQ(y.is_contiguous(kCL), cl);
        EXPECT_EQ(values_of(y), values_of(fn(x32).to(t)));
        // An upstream gradient in eighths, exact in both dtypes, so the float32 gradients of
        // the two paths are the same and the 16-bit one is their rounding.
        std::vector<double> u = values_of(random_tensor(y.sizes(), -1, 1, 13));
        for (double& v : u) v = std::round(v * 8) / 8;
        const Tensor up = tensor(u, y.sizes());
        Tensor a = x16.detach().requires_grad_(), b = x32.detach().requires_grad_();
        fn(a).backward(up.to(t));
        fn(b).backward(up.to(kFloat32));
        EXPECT_EQ(values_of(a.grad()), values_of(b.grad().to(t)));
      }
    }
}

TEST(Interpolate, KernelLayoutsDtypesAndGradients) {
  for (std::string mode : {"nearest", "bilinear"}) {
    expect_layouts_and_dtypes_agree(
        mode + " x2",
        [&](const Tensor& x) { return F::interpolate(x, {.scale_factor = 2.0, .mode = mode}); },
        {2, 3, 4, 5});
    expect_layouts_and_dtypes_agree(
        mode + " down",
        [&](const Tensor& x) {
          return F::interpolate(x, {.size = Size2{3, 7}, .mode = mode});
        },
        {1, 10, 5, 4});
  }
  expect_layouts_and_dtypes_agree(
      "bilinear corners",
      [&](const Tensor& x) {
        return F::interpolate(x, {.size = Size2{7, 9}, .mode = "bilinear", .align_corners = true});
      },
      {2, 3, 4, 5});
}
