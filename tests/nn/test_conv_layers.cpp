// Convolution, normalisation and pooling layers and the differentiable functions behind them:
// PyTorch's parameter names, shapes and default initialisation bounds, running statistics,
// and gradients against finite differences (gradcheck, float64).
#include <cmath>

#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

TEST(ConvLayers, NamesShapesAndInit) {
  struct Net : nn::Module {
    nn::Conv2d conv{this, "conv", 3, 8, 3, 1, 1, false};
    nn::BatchNorm2d bn{this, "bn", 8};
    nn::Conv2d down{this, "down", nn::Conv2dConfig{.in_channels = 8, .out_channels = 4, .kernel_size = {1, 1}, .stride = {2, 2}}};
  } net;
  std::vector<std::string> keys;
  for (const auto& [k, t] : net.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"conv.weight", "bn.weight", "bn.bias", "bn.running_mean",
                                            "bn.running_var", "bn.num_batches_tracked", "down.weight", "down.bias"}));
  EXPECT_EQ(net.conv.weight.sizes(), (Shape{8, 3, 3, 3}));
  EXPECT_EQ(net.bn.num_batches_tracked.dtype(), kInt64);
  // kaiming_uniform_(a = sqrt(5)) bound = 1 / sqrt(fan_in), fan_in = 3 * 3 * 3.
  const double bound = 1 / std::sqrt(27.0);
  EXPECT_LE(net.conv.weight.abs().max().item<double>(), bound);
  EXPECT_GT(net.conv.weight.abs().max().item<double>(), 0.8 * bound);
  EXPECT_LE(net.down.bias.abs().max().item<double>(), 1 / std::sqrt(8.0));
  EXPECT_THROW_MSG(nn::Conv2d(nn::Conv2dConfig{.in_channels = 3, .out_channels = 4, .groups = 2}), ValueError,
                   "[Conv2d] in_channels (3) and out_channels (4) must be divisible by groups (2)");
  EXPECT_THROW_MSG(net.bn(zeros({2, 8, 4})), ShapeError, "[BatchNorm2d] expected a 4D input");
}

TEST(ConvLayers, BatchNormRunningStatistics) {
  nn::BatchNorm2d bn(3, {.momentum = 0.2});
  Tensor x = random_tensor({4, 3, 5, 5}, -1, 3, 11).to(kFloat32);
  Tensor y = bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  // Running stats after one step: 0.8 * init + 0.2 * batch (unbiased variance).
  auto xv = values_of(x);
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0, ss = 0;
    const int n = 4 * 25;
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t i = 0; i < 25; ++i) {
        const double v = xv[size_t((b * 3 + c) * 25 + i)];
        s += v, ss += v * v;
      }
    const double mean = s / n, var_unbiased = (ss - n * mean * mean) / (n - 1);
    EXPECT_NEAR(bn.running_mean[c].item<double>(), 0.2 * mean, 1e-5);
    EXPECT_NEAR(bn.running_var[c].item<double>(), 0.8 + 0.2 * var_unbiased, 1e-5);
  }
  // Training output is normalised per channel; eval uses the running statistics.
  EXPECT_NEAR(y.mean({0, 2, 3}).abs().max().item<double>(), 0, 1e-5);
  bn.eval();
  Tensor e = bn(x);
  Tensor expected = (x - bn.running_mean.view({1, 3, 1, 1})) / sqrt(bn.running_var.view({1, 3, 1, 1}) + 1e-5);
  EXPECT_TRUE(allclose(e, expected, 1e-5, 1e-5));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
}

TEST(ConvLayers, GradientsOfTheFunctionalOps) {
  Tensor x = random_tensor({2, 4, 6, 5}, -1, 1, 1), w = random_tensor({6, 2, 3, 3}, -1, 1, 2), b = random_tensor({6}, -1, 1, 3);
  expect_gradcheck("conv2d", [](const auto& v) {
    return conv2d(v[0], v[1], v[2], {.stride = {2, 1}, .padding = {1, 1}, .groups = 2});
  }, {x, w, b});
  expect_gradcheck("conv2d_channels_last", [](const auto& v) {
    return conv2d(v[0].permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}), v[1], Tensor(), {.padding_mode = "same", .groups = 2});
  }, {x, w});
  Tensor wt = random_tensor({4, 3, 3, 3}, -1, 1, 4);
  expect_gradcheck("conv_transpose2d", [](const auto& v) {
    return conv_transpose2d(v[0], v[1], Tensor(), {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 0}});
  }, {x, wt});
  expect_gradcheck("max_pool2d", [](const auto& v) { return max_pool2d(v[0], {.kernel_size = {2, 2}, .stride = Size2{2, 1}}); }, {x});
  expect_gradcheck("avg_pool2d", [](const auto& v) {
    return avg_pool2d(v[0], {.kernel_size = {3, 3}, .stride = Size2{2, 2}, .padding = {1, 1}, .count_include_pad = false});
  }, {x});
  expect_gradcheck("adaptive_avg_pool2d", [](const auto& v) { return adaptive_avg_pool2d(v[0], {4, 3}); }, {x});
  Tensor g = random_tensor({4}, 0.5, 1.5, 5), beta = random_tensor({4}, -1, 1, 6);
  expect_gradcheck("batch_norm_train", [](const auto& v) {
    return batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true);
  }, {x, g, beta});
  Tensor rm = random_tensor({4}, -0.5, 0.5, 7), rv = random_tensor({4}, 0.5, 2, 8);
  expect_gradcheck("batch_norm_eval", [rm, rv](const auto& v) {
    return batch_norm(v[0], rm, rv, v[1], v[2], false);
  }, {x, g, beta});
  expect_gradcheck("layer_norm", [](const auto& v) { return layer_norm(v[0], {6, 5}, v[1], v[2]); },
                   {x, random_tensor({6, 5}, 0.5, 1.5, 9), random_tensor({6, 5}, -1, 1, 10)});
  expect_gradcheck("group_norm", [](const auto& v) { return group_norm(v[0], 2, v[1], v[2]); }, {x, g, beta});
}

TEST(ConvLayers, ModuleGradientsFlowToParameters) {
  nn::Conv2d conv(nn::Conv2dConfig{.in_channels = 2, .out_channels = 3, .kernel_size = {3, 3}, .padding = {1, 1}});
  Tensor x = random_tensor({1, 2, 4, 4}, -1, 1, 12).to(kFloat32);
  conv(x).pow(2).sum().backward();
  ASSERT_TRUE(conv.weight.grad().defined());
  ASSERT_TRUE(conv.bias.grad().defined());
  // d/db sum(y^2) = sum over positions of 2 y for that channel.
  Tensor y = conv(x).detach();
  EXPECT_TRUE(allclose(conv.bias.grad(), (y * 2).sum({0, 2, 3}), 1e-4, 1e-5));
}
