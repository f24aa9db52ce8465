// nn::functional::linear with a fused ReLU: forward values and float32 gradients against
// float64 loops over shapes that take each path (the thin-product kernel straight and
// transposed, with and without packing, partial tiles; the composed fallback), gradcheck in
// float64, and Sequential's fusion of Linear + ReLU against the unfused layers.
#include <cmath>
#include <limits>

#include "support/test_support.h"

namespace ignis {
namespace {

namespace F = nn::functional;
using testing::all_close;
using testing::make_input;
using testing::random_values;
using testing::values_of;

struct Case {
  int64_t m, n, k;
};
// (64, 512, 10): the MLP's first layer. Partial row tiles (m % 6) and column tiles (n % 16),
// k = 1, more rows than columns (computed transposed), a long inner dimension with a thin
// output, and products the kernel leaves to BLAS (not thin; a transposed operand too large
// to pack).
constexpr Case kCases[] = {
    {64, 512, 10},
    {5, 37, 3},
    {7, 16, 1},
    {1, 40, 9},
    {100, 20, 16},
    {3, 40, 600},
    {13, 70, 8},
    {64, 64, 64},
    {33, 300, 17},
    {600, 16, 20}};

/// relu(x w^T + b) in float64 from the float32 inputs' values.
std::vector<double> reference(
    const std::vector<double>& x,
    const std::vector<double>& w,
    const std::vector<double>& b,
    const Case& c) {
  std::vector<double> out(size_t(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double s = b.empty() ? 0 : b[size_t(j)];
      for (int64_t p = 0; p < c.k; ++p) s += x[size_t(i * c.k + p)] * w[size_t(j * c.k + p)];
      out[size_t(i * c.n + j)] = s > 0 ? s : 0;
    }
  return out;
}

TEST(LinearRelu, ForwardMatchesLoop) {
  uint64_t seed = 1;
  for (const Case& c : kCases)
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(
          ::testing::Message() << c.m << "x" << c.n << "x" << c.k << " bias " << with_bias);
      const Tensor x = make_input(random_values(c.m * c.k, -1, 1, seed++), {c.m, c.k}, kFloat32);
      const Tensor w = make_input(random_values(c.n * c.k, -1, 1, seed++), {c.n, c.k}, kFloat32);
      const Tensor b =
          with_bias ? make_input(random_values(c.n, -1, 1, seed++), {c.n}, kFloat32) : Tensor();
      const Tensor y = F::linear(x, w, b, F::Activation::ReLU);
      ASSERT_EQ(y.sizes(), (Shape{c.m, c.n}));
      const auto expected = reference(
          values_of(x), values_of(w), with_bias ? values_of(b) : std::vector<double>{}, c);
      EXPECT_TRUE(all_close(y, expected, 1e-5, 1e-5 * std::sqrt(double(c.k))));
    }
}

TEST(LinearRelu, StridedInputsAndWeights) {
  const Case c{40, 48, 12};
  const auto xv = random_values(c.m * c.k, -1, 1, 11), wv = random_values(c.n * c.k, -1, 1, 12),
             bv = random_values(c.n, -1, 1, 13);
  const auto expected = reference(xv, wv, bv, c);
  for (auto layout : testing::kAllLayouts) {
    SCOPED_TRACE(testing::layout_name(layout));
    const Tensor y = F::linear(
        make_input(xv, {c.m, c.k}, kFloat32, layout),
        make_input(wv, {c.n, c.k}, kFloat32, layout),
        make_input(bv, {c.n}, kFloat32),
        F::Activation::ReLU);
    EXPECT_TRUE(all_close(y, expected, 1e-5, 1e-5));
  }
}

TEST(LinearRelu, NaNPassesThroughAsRelu) {
  // relu keeps NaN; the fused epilogue must too (and map -0 to +0 like relu).
  std::vector<double> xv = random_values(6 * 4, -1, 1, 21);
  xv[5] = std::numeric_limits<double>::quiet_NaN();  // row 1
  const Tensor x = make_input(xv, {6, 4}, kFloat32);
  const Tensor w = make_input(random_values(32 * 4, -1, 1, 22), {32, 4}, kFloat32);
  const Tensor b = make_input(random_values(32, -1, 1, 23), {32}, kFloat32);
  const Tensor fused = F::linear(x, w, b, F::Activation::ReLU);
  const Tensor composed = relu(F::linear(x, w, b));
  const auto f = values_of(fused), c = values_of(composed);
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(std::isnan(f[i]), std::isnan(c[i])) << "element " << i;
    EXPECT_EQ(std::isnan(f[i]), i / 32 == 1) << "element " << i;
    if (!std::isnan(f[i])) EXPECT_FALSE(std::signbit(f[i])) << "element " << i;
  }
}

/// Runs sum(linear_relu(x, w, b) * r).backward() for case c and checks every gradient that
/// was asked for against float64 loops. Without an input gradient the weight gradient comes
/// from the kernel that never stores the masked gradient (up to 48 features, in passes of 12),
/// with one the mask is stored and multiplied; x is read through `layout`'s strides.
/// With `act` None the same for the plain linear layer (its own forward and backward kernels),
/// the weight also read through `w_layout`'s strides, in `dtype`.
void check_gradients(const Case& c, bool input_grad, bool with_bias, testing::Layout layout,
                     uint64_t seed, F::Activation act = F::Activation::ReLU,
                     testing::Layout w_layout = testing::kAllLayouts[0], DType dtype = kFloat32) {
  const auto xv = random_values(c.m * c.k, -1, 1, seed),
             wv = random_values(c.n * c.k, -1, 1, seed + 1),
             bv = random_values(c.n, -1, 1, seed + 2),
             rv = random_values(c.m * c.n, -1, 1, seed + 3);
  Tensor x = make_input(xv, {c.m, c.k}, dtype, layout).requires_grad_(input_grad);
  Tensor w = make_input(wv, {c.n, c.k}, dtype, w_layout).requires_grad_();
  Tensor b = with_bias ? make_input(bv, {c.n}, dtype).requires_grad_() : Tensor();
  const Tensor r = make_input(rv, {c.m, c.n}, dtype);
  const Tensor y = F::linear(x, w, b, act);
  (y * r).sum().backward();
  // d/dz of sum(relu(z) * r) is r where the output is positive (the mask taken from the
  // float32 output itself, so that values at the kink cannot disagree); without ReLU, r.
  const bool relu = act == F::Activation::ReLU;
  const auto yv = values_of(y);
  std::vector<double> gx(size_t(c.m * c.k), 0), gw(size_t(c.n * c.k), 0), gb(size_t(c.n), 0);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const double d = !relu || yv[size_t(i * c.n + j)] > 0 ? rv[size_t(i * c.n + j)] : 0;
      gb[size_t(j)] += d;
      for (int64_t p = 0; p < c.k; ++p) {
        gx[size_t(i * c.k + p)] += d * wv[size_t(j * c.k + p)];
        gw[size_t(j * c.k + p)] += d * xv[size_t(i * c.k + p)];
      }
    }
  const double tol =
      (dtype == kFloat64 ? 1e-12 : 1e-5) * std::sqrt(double(std::max({c.m, c.n, c.k})));
  if (input_grad)
    EXPECT_TRUE(all_close(x.grad(), gx, 1e-4, tol)) << "x";
  else
    EXPECT_FALSE(x.grad().defined());
  ASSERT_EQ(w.grad().sizes(), w.sizes());
  EXPECT_TRUE(all_close(w.grad(), gw, 1e-4, tol)) << "weight";
  if (with_bias) EXPECT_TRUE(all_close(b.grad(), gb, 1e-4, tol)) << "bias";
}

TEST(LinearRelu, Float32GradientsMatchLoop) {
  uint64_t seed = 100;
  for (const Case& c : kCases)
    for (bool input_grad : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << c.m << "x" << c.n << "x" << c.k << " input grad " << input_grad);
      check_gradients(c, input_grad, true, testing::kAllLayouts[0], seed);
      seed += 4;
    }
}

TEST(LinearRelu, WeightGradientWithoutInputGradient) {
  // Feature counts around the kernel's passes of 12 and its limit of 48, hidden units that
  // leave a partial block of 8, inputs read through every layout's strides, with and without
  // a bias; a gradient of more than 2^17 elements goes to the stored-mask path.
  constexpr Case cases[] = {{64, 512, 12}, {9, 13, 13}, {31, 40, 24}, {8, 19, 25},
                            {16, 8, 48},   {12, 24, 49}, {300, 512, 10}};
  uint64_t seed = 500;
  for (const Case& c : cases)
    for (auto layout : testing::kAllLayouts)
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(::testing::Message() << c.m << "x" << c.n << "x" << c.k << " "
                                          << testing::layout_name(layout) << " bias "
                                          << with_bias);
        check_gradients(c, false, with_bias, layout, seed);
        seed += 4;
      }
}

// The plain linear layer's node (its forward kernel: the thin-product kernel with the bias in
// its epilogue, or the bias rows and one BLAS call; its backward kernel: two BLAS calls and a
// column sum): values and every gradient against float64 loops, for the shapes of kCases,
// inputs and weights read through every layout's strides, in float32 and float64.
TEST(LinearPlain, ForwardAndGradientsMatchLoopEveryLayout) {
  uint64_t seed = 700;
  for (DType dtype : {kFloat32, kFloat64})
    for (const Case& c : kCases)
      for (auto layout : testing::kAllLayouts)
        for (bool with_bias : {true, false}) {
          SCOPED_TRACE(::testing::Message()
                       << dtype_name(dtype) << " " << c.m << "x" << c.n << "x" << c.k << " "
                       << testing::layout_name(layout) << " bias " << with_bias);
          const auto xv = random_values(c.m * c.k, -1, 1, seed),
                     wv = random_values(c.n * c.k, -1, 1, seed + 1),
                     bv = random_values(c.n, -1, 1, seed + 2);
          const Tensor y = F::linear(make_input(xv, {c.m, c.k}, dtype, layout),
                                     make_input(wv, {c.n, c.k}, dtype, layout),
                                     with_bias ? make_input(bv, {c.n}, dtype) : Tensor());
          ASSERT_EQ(y.sizes(), (Shape{c.m, c.n}));
          std::vector<double> expected(size_t(c.m * c.n));
          for (int64_t i = 0; i < c.m; ++i)
            for (int64_t j = 0; j < c.n; ++j) {
              double v = with_bias ? bv[size_t(j)] : 0;
              for (int64_t p = 0; p < c.k; ++p)
                v += xv[size_t(i * c.k + p)] * wv[size_t(j * c.k + p)];
              expected[size_t(i * c.n + j)] = v;
            }
          const double tol = (dtype == kFloat64 ? 1e-12 : 1e-5) * std::sqrt(double(c.k));
          EXPECT_TRUE(all_close(y, expected, 1e-5, tol));
          check_gradients(c, true, with_bias, layout, seed, F::Activation::None, layout, dtype);
          check_gradients(c, false, with_bias, layout, seed + 4, F::Activation::None,
                          testing::kAllLayouts[0], dtype);
          seed += 8;
        }
}

TEST(LinearPlain, GradcheckAndSecondOrder) {
  testing::expect_gradcheck(
      "linear",
      [](const auto& v) { return F::linear(v[0], v[1], v[2]); },
      {testing::random_tensor({5, 3}, -1, 1, 51),
       testing::random_tensor({17, 3}, -1, 1, 52),
       testing::random_tensor({17}, -1, 1, 53)});
  // create_graph takes the composed backward (mm and sum), so the gradient can itself be
  // differentiated: d/dw of sum((dL/dx)^2) for L = sum(y^2), y = x w^T + b, against the same
  // through matmul and add (recorded op by op).
  auto grad_of_grad = [](bool node) {
    Tensor x = testing::random_tensor({4, 3}, -1, 1, 54).requires_grad_();
    Tensor w = testing::random_tensor({6, 3}, -1, 1, 55).requires_grad_();
    Tensor b = testing::random_tensor({6}, -1, 1, 56).requires_grad_();
    Tensor y = node ? F::linear(x, w, b) : matmul(x, w.t()) + b;
    Tensor gx = autograd::grad({(y * y).sum()}, {x}, {}, true, true)[0];
    (gx * gx).sum().backward();
    return values_of(w.grad());
  };
  EXPECT_TRUE(all_close(grad_of_grad(true), grad_of_grad(false), 1e-12, 1e-12));
}

TEST(LinearRelu, Gradcheck) {
  testing::expect_gradcheck(
      "linear_relu",
      [](const auto& v) { return F::linear(v[0], v[1], v[2], F::Activation::ReLU); },
      {testing::random_tensor({5, 3}, -1, 1, 31),
       testing::random_tensor({17, 3}, -1, 1, 32),
       testing::random_tensor({17}, -1, 1, 33)});
  testing::expect_gradcheck(
      "linear_relu_no_bias",
      [](const auto& v) { return F::linear(v[0], v[1], Tensor(), F::Activation::ReLU); },
      {testing::random_tensor({4, 6}, -1, 1, 34), testing::random_tensor({3, 6}, -1, 1, 35)});
  testing::expect_gradcheck(
      "linear_relu_3d",
      [](const auto& v) { return F::linear(v[0], v[1], v[2], F::Activation::ReLU); },
      {testing::random_tensor({2, 3, 4}, -1, 1, 36),
       testing::random_tensor({5, 4}, -1, 1, 37),
       testing::random_tensor({5}, -1, 1, 38)});
}

TEST(LinearRelu, SecondOrderGradientMatchesComposition) {
  // create_graph takes the composed backward, so the gradient can itself be differentiated.
  auto grad_of_grad = [](bool fused) {
    Tensor x = testing::random_tensor({4, 3}, -1, 1, 41).requires_grad_();
    Tensor w = testing::random_tensor({20, 3}, -1, 1, 42).requires_grad_();
    Tensor b = testing::random_tensor({20}, -1, 1, 43).requires_grad_();
    Tensor y = fused ? F::linear(x, w, b, F::Activation::ReLU) : relu(F::linear(x, w, b));
    Tensor gx = autograd::grad({(y * y).sum()}, {x}, {}, true, true)[0];
    gx.sum().backward();
    return values_of(w.grad());
  };
  EXPECT_TRUE(all_close(grad_of_grad(true), grad_of_grad(false), 1e-12, 1e-12));
}

TEST(LinearRelu, BadShapesNameLinear) {
  EXPECT_THROW_MSG(
      F::linear(zeros({2, 4}), zeros({5, 3}), zeros({5}), F::Activation::ReLU),
      ShapeError,
      "[linear] input [2, 4] does not fit weight [5, 3]");
  EXPECT_THROW_MSG(
      F::linear(zeros({2, 3}), zeros({5, 3}), zeros({4}), F::Activation::ReLU),
      ShapeError,
      "[linear] bias [4] does not fit weight [5, 3]");
}

TEST(LinearRelu, SequentialFusesLinearReluWithSameResults) {
  manual_seed(5);
  nn::Sequential seq{
      std::make_unique<nn::Linear>(10, 64),
      std::make_unique<nn::ReLU>(),
      std::make_unique<nn::Linear>(64, 3)};
  const Tensor x = randn({8, 10});
  const Tensor y = seq(x);
  auto& l1 = seq.at<nn::Linear>(0);
  auto& l2 = seq.at<nn::Linear>(2);
  const Tensor unfused = l2(relu(l1(x)));
  EXPECT_TRUE(all_close(y, values_of(unfused), 1e-6, 1e-6));
  y.sum().backward();
  const auto fused_grad = values_of(l1.weight.grad());
  seq.zero_grad();
  l2(relu(l1(x))).sum().backward();
  EXPECT_TRUE(all_close(fused_grad, values_of(l1.weight.grad()), 1e-6, 1e-6));
}

}  // namespace
}  // namespace ignis
