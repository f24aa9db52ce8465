// Layer forwards against float64 loops, Dropout's mask statistics, and nn::init's
// distributions (bounds, moments) and fan computations against the formulas.
#include <cmath>

#include "support/test_support.h"

namespace ignis {
namespace {

using testing::all_close;
using testing::make_input;
using testing::random_values;
using testing::values_of;

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size()));
}

TEST(Linear, ForwardMatchesLoop) {
  for (bool bias : {true, false}) {
    nn::Linear lin(3, 5, bias);
    lin.to(kFloat64);
    const Shape shape{2, 4, 3};  // batched input: [*, in]
    auto xv = random_values(24, -2, 2, 7);
    for (auto layout : testing::kAllLayouts) {
      Tensor x = make_input(xv, shape, kFloat64, layout);
      auto w = values_of(lin.weight);
      auto b = bias ? values_of(lin.bias) : std::vector<double>(5, 0.0);
      std::vector<double> expected;
      for (int r = 0; r < 8; ++r)
        for (int o = 0; o < 5; ++o) {
          double s = b[o];
          for (int i = 0; i < 3; ++i) s += xv[r * 3 + i] * w[o * 3 + i];
          expected.push_back(s);
        }
      Tensor y = lin(x);
      EXPECT_EQ(y.sizes(), (Shape{2, 4, 5}));
      EXPECT_TRUE(all_close(y, expected, 1e-12, 1e-12)) << testing::layout_name(layout);
      EXPECT_TRUE(all_close(lin(x.reshape({8, 3})), expected, 1e-12, 1e-12));  // addmm path
    }
  }
  nn::Linear lin(3, 5);
  EXPECT_THROW_MSG(lin(zeros({2, 4})), ShapeError,
                   "[linear] input [2, 4] does not fit weight [5, 3]: the last dim must be 3");
}

TEST(Linear, DefaultInitIsUniformOverFanIn) {
  nn::Linear lin(400, 300);
  const double bound = 1 / std::sqrt(400.0);
  for (const Tensor& t : {lin.weight, lin.bias}) {
    auto v = values_of(t);
    double lo = 1, hi = -1;
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
    EXPECT_GE(lo, -bound);
    EXPECT_LE(hi, bound);
    if (v.size() > 1000) {  // the weight: range filled, variance bound^2 / 3
      EXPECT_LT(lo, -0.99 * bound);
      EXPECT_GT(hi, 0.99 * bound);
      EXPECT_NEAR(mean_of(v), 0, 0.01 * bound);
      EXPECT_NEAR(std_of(v), bound / std::sqrt(3.0), 0.01 * bound);
    }
  }
}

TEST(Activations, MatchFormulas) {
  auto xv = random_values(60, -4, 4, 11);
  xv[0] = 0;
  Tensor x = make_input(xv, {6, 10}, kFloat64, testing::Layout::Transposed);
  auto check = [&](nn::Module& m, auto f, const char* what) {
    std::vector<double> e;
    for (double v : xv) e.push_back(f(v));
    EXPECT_TRUE(all_close(m(x), e, 1e-12, 1e-14)) << what;
  };
  nn::ReLU relu_m;
  nn::LeakyReLU leaky(0.2);
  nn::GELU gelu_m, gelu_tanh("tanh");
  nn::SiLU silu_m;
  nn::Sigmoid sigmoid_m;
  nn::Tanh tanh_m;
  nn::Identity id;
  check(relu_m, [](double v) { return v > 0 ? v : 0; }, "relu");
  check(
      leaky, [](double v) { return v > 0 ? v : 0.2 * v; }, "leaky_relu");
  {
    // The slope at 0 and -0 too, as PyTorch's gradient (and -0 * slope keeps its sign).
    Tensor z = tensor<double>({0, -0.0, 1, -1}).requires_grad_();
    Tensor y = leaky(z);
    y.sum().backward();
    EXPECT_EQ(values_of(z.grad()), (std::vector<double>{0.2, 0.2, 1, 0.2}));
    EXPECT_TRUE(std::signbit(y.to_vector<double>()[1]));
  }
  check(gelu_m, [](double v) { return v * 0.5 * (1 + std::erf(v / std::sqrt(2.0))); }, "gelu");
  check(gelu_tanh, [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }, "gelu tanh");
  check(silu_m, [](double v) { return v / (1 + std::exp(-v)); }, "silu");
  check(sigmoid_m, [](double v) { return 1 / (1 + std::exp(-v)); }, "sigmoid");
  check(tanh_m, [](double v) { return std::tanh(v); }, "tanh");
  check(id, [](double v) { return v; }, "identity");
  EXPECT_THROW_MSG(nn::GELU("erf"), ValueError, "approximate must be");

  nn::Softmax sm(1);
  std::vector<double> e(60);
  for (int r = 0; r < 6; ++r) {
    double s = 0;
    for (int c = 0; c < 10; ++c) s += std::exp(xv[r * 10 + c]);
    for (int c = 0; c < 10; ++c) e[r * 10 + c] = std::exp(xv[r * 10 + c]) / s;
  }
  EXPECT_TRUE(all_close(sm(x), e, 1e-12, 1e-15));
  nn::Flatten flat;
  EXPECT_EQ(flat(zeros({2, 3, 4, 5})).sizes(), (Shape{2, 60}));
  EXPECT_EQ(nn::Flatten(0, 1)(zeros({2, 3, 4})).sizes(), (Shape{6, 4}));
}

TEST(Embedding, LooksUpRows) {
  nn::Embedding emb(7, 3, /*padding_idx=*/-1);
  EXPECT_EQ(emb.padding_idx, 6);
  EXPECT_EQ(values_of(emb.weight[6]), std::vector<double>(3, 0.0));
  const auto w = values_of(emb.weight);
  Tensor idx = tensor<int64_t>({4, 0, 6, 4, 2, 1}, Shape{2, 3});
  Tensor out = emb(idx);
  EXPECT_EQ(out.sizes(), (Shape{2, 3, 3}));
  std::vector<double> expected;
  for (int64_t i : {4, 0, 6, 4, 2, 1})
    for (int d = 0; d < 3; ++d) expected.push_back(w[i * 3 + d]);
  EXPECT_TRUE(all_close(out, expected, 0, 0));
  EXPECT_THROW_MSG(emb(tensor<int64_t>({1, 7})), IndexError,
                   "[Embedding] index 7 is out of range for 7 embeddings");
  EXPECT_THROW_MSG(emb(zeros({2})), DTypeError, "indices must be integers");
  // N(0, 1) initialisation.
  nn::Embedding big(1000, 100);
  auto v = values_of(big.weight);
  EXPECT_NEAR(mean_of(v), 0, 0.02);
  EXPECT_NEAR(std_of(v), 1, 0.02);
}

TEST(Dropout, MaskStatisticsAndScaling) {
  const double p = 0.3;
  nn::Dropout drop(p);
  Tensor x = full({200000}, 2.0);
  auto y = values_of(drop(x));
  int64_t zeros_n = 0;
  for (double v : y) {
    if (v == 0) ++zeros_n;
    else EXPECT_NEAR(v, 2 / (1 - p), 1e-6) << "kept values are scaled by 1/(1-p)";
  }
  // Binomial(200000, 0.3): standard deviation ~205 elements.
  EXPECT_NEAR(double(zeros_n) / 200000, p, 0.005);
  EXPECT_NE(values_of(drop(x)), y);  // a fresh mask each call
  drop.eval();
  EXPECT_EQ(values_of(drop(x)), values_of(x));
  EXPECT_EQ(values_of(nn::functional::dropout(x, 1.0)), std::vector<double>(200000, 0.0));
  EXPECT_EQ(values_of(nn::functional::dropout(x, 0.0)), values_of(x));
  EXPECT_THROW_MSG(nn::Dropout(1.5), ValueError, "between 0 and 1, but got 1.5");
  // Same generator state, same mask.
  Generator g1(42), g2(42);
  EXPECT_EQ(values_of(nn::functional::dropout(x, 0.5, true, &g1)),
            values_of(nn::functional::dropout(x, 0.5, true, &g2)));
}

TEST(Init, FansAndGains) {
  auto [fi, fo] = nn::init::calculate_fan_in_and_fan_out(zeros({16, 8, 3, 3}));
  EXPECT_EQ(fi, 8 * 9);
  EXPECT_EQ(fo, 16 * 9);
  auto [fi2, fo2] = nn::init::calculate_fan_in_and_fan_out(zeros({5, 7}));
  EXPECT_EQ(fi2, 7);
  EXPECT_EQ(fo2, 5);
  EXPECT_THROW_MSG(nn::init::calculate_fan_in_and_fan_out(zeros({5})), ValueError,
                   "fewer than 2 dimensions");
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("conv2d"), 1);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("selu"), 0.75);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu"), std::sqrt(2 / (1 + 1e-4)));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2 / 1.04));
  EXPECT_THROW_MSG(nn::init::calculate_gain("swish"), ValueError, "unsupported nonlinearity swish");
}

// Uniform draws: inside [-bound, bound], reaching both ends, variance bound^2 / 3.
// rel: rounding of the bound in the tensor's dtype.
void expect_uniform(const Tensor& t, double bound, double rel = 1e-6) {
  auto v = values_of(t);
  double lo = 1e300, hi = -1e300;
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -bound * (1 + rel));
  EXPECT_LE(hi, bound * (1 + rel));
  EXPECT_LT(lo, -0.98 * bound);
  EXPECT_GT(hi, 0.98 * bound);
  EXPECT_NEAR(std_of(v), bound / std::sqrt(3.0), 0.02 * bound);
}

void expect_normal(const Tensor& t, double mean, double std) {
  auto v = values_of(t);
  EXPECT_NEAR(mean_of(v), mean, 0.02 * std);
  EXPECT_NEAR(std_of(v), std, 0.02 * std);
}

TEST(Init, Distributions) {
  Tensor w = empty({64, 32, 3, 3});  // conv weight: fan_in 288, fan_out 576
  expect_uniform(nn::init::kaiming_uniform_(w, 0, "fan_in", "relu"), std::sqrt(6.0 / 288));
  expect_uniform(nn::init::kaiming_uniform_(w, std::sqrt(5.0)), 1 / std::sqrt(288.0));
  expect_normal(nn::init::kaiming_normal_(w, 0, "fan_out", "relu"), 0, std::sqrt(2.0 / 576));
  expect_uniform(nn::init::xavier_uniform_(w, 2), 2 * std::sqrt(6.0 / (288 + 576)));
  expect_normal(nn::init::xavier_normal_(w), 0, std::sqrt(2.0 / (288 + 576)));
  expect_normal(nn::init::normal_(w, 3, 0.5), 3, 0.5);
  expect_uniform(nn::init::uniform_(w, -0.7, 0.7), 0.7);
  EXPECT_EQ(values_of(nn::init::constant_(w, 0.25)), std::vector<double>(w.numel(), 0.25));
  EXPECT_EQ(values_of(nn::init::zeros_(w)), std::vector<double>(w.numel(), 0.0));
  EXPECT_EQ(values_of(nn::init::ones_(w)), std::vector<double>(w.numel(), 1.0));
  EXPECT_THROW_MSG(nn::init::kaiming_uniform_(w, 0, "fan_avg"), ValueError,
                   "mode fan_avg not supported");
  Tensor ints = zeros({4, 4}, kInt64);
  EXPECT_THROW_MSG(nn::init::normal_(ints), DTypeError, "expects a floating tensor");
  // Other floating dtypes, and a parameter that requires grad (filled without recording).
  for (DType dt : {kFloat64, kFloat16, kBFloat16}) {
    Tensor h = empty({256, 256}, dt).requires_grad_();
    expect_uniform(nn::init::kaiming_uniform_(h, 0, "fan_in", "linear"), std::sqrt(3.0 / 256),
                   dt == kBFloat16 ? 1.0 / 128 : dt == kFloat16 ? 1.0 / 1024 : 1e-12);
    EXPECT_EQ(h.dtype(), dt);
    EXPECT_TRUE(h.is_leaf());
  }
}

TEST(Init, TruncNormalStaysInBoundsWithTheTruncatedMoments) {
  const double mean = 1, std = 2, a = -1, b = 4;
  Tensor t = empty({400000}, kFloat64);
  auto v = values_of(nn::init::trunc_normal_(t, mean, std, a, b));
  for (double x : v) ASSERT_TRUE(x >= a && x <= b) << x;
  // Moments of N(mean, std^2) truncated to [a, b].
  auto pdf = [](double z) { return std::exp(-z * z / 2) / std::sqrt(2 * M_PI); };
  auto cdf = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const double al = (a - mean) / std, be = (b - mean) / std, Z = cdf(be) - cdf(al);
  const double m = mean + std * (pdf(al) - pdf(be)) / Z;
  const double var = std * std *
                     (1 + (al * pdf(al) - be * pdf(be)) / Z - std::pow((pdf(al) - pdf(be)) / Z, 2));
  EXPECT_NEAR(mean_of(v), m, 0.01);
  EXPECT_NEAR(std_of(v), std::sqrt(var), 0.01);
  EXPECT_THROW_MSG(nn::init::trunc_normal_(t, 0, 1, 2, 1), ValueError, "needs a < b");
}

}  // namespace
}  // namespace ignis
