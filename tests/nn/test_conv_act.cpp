// nn::functional::conv2d with a fused ReLU (oneDNN's post-op on the CPU): forward values and
// float32 gradients against float64 convolutions (our own loops, not oneDNN) over shapes
// that take the NCHW, channels-last and NHWC-copy paths, with and without bias and input
// gradient; gradcheck in float64 (the composed path); Conv2d::forward_relu and Sequential's
// fusion of Conv2d + ReLU against the unfused layers.
#include <cmath>

#include "support/test_support.h"

namespace ignis {
namespace {

namespace F = nn::functional;
using testing::all_close;
using testing::values_of;

/// Uniform values in [lo, hi) as float32 (the support helper's tensors are float64).
Tensor random_tensor(const Shape& shape, double lo, double hi, uint64_t seed) {
  return testing::random_tensor(shape, lo, hi, seed).to(kFloat32);
}

struct Case {
  const char* name;
  int64_t n, c, h, w, o, k;
  Conv2dOptions opts;
  bool channels_last_input;
};
// Fewer than 32 output channels stay NCHW; 32 or more come back channels-last; 128 channels
// in and out take the NHWC copy around an NCHW convolution.
const Case kCases[] = {
    {"nchw", 2, 3, 7, 6, 5, 3, {.padding = {1, 1}}, false},
    {"strided_grouped",
     2,
     4,
     9,
     8,
     6,
     3,
     {.stride = {2, 2}, .padding = {1, 0}, .groups = 2},
     false},
    {"channels_last_out", 2, 1, 10, 10, 32, 3, {.padding = {1, 1}}, false},
    {"channels_last_in", 2, 32, 6, 6, 64, 3, {.padding = {1, 1}}, true},
    {"nhwc_copy", 1, 128, 4, 4, 128, 1, {}, false},
    {"same_dilated", 1, 2, 7, 7, 3, 3, {.padding_mode = "same", .dilation = {2, 2}}, false},
    {"depthwise", 2, 6, 9, 19, 6, 3, {.padding = {1, 1}, .groups = 6}, false},
    {"depthwise_channels_last",
     2,
     6,
     5,
     11,
     6,
     3,
     {.stride = {2, 2}, .padding = {1, 1}, .groups = 6},
     true},
};

Tensor input_of(const Case& c, uint64_t seed) {
  Tensor x = random_tensor({c.n, c.c, c.h, c.w}, -1, 1, seed);
  return c.channels_last_input ? x.contiguous(MemoryFormat::channels_last) : x;
}

TEST(ConvRelu, ForwardMatchesFloat64Convolution) {
  uint64_t seed = 1;
  for (const Case& c : kCases)
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(::testing::Message() << c.name << " bias " << with_bias);
      const Tensor x = input_of(c, seed++);
      const Tensor w = random_tensor({c.o, c.c / c.opts.groups, c.k, c.k}, -0.5, 0.5, seed++);
      const Tensor b = with_bias ? random_tensor({c.o}, -0.5, 0.5, seed++) : Tensor();
      const Tensor y = F::conv2d(x, w, b, c.opts, F::Activation::ReLU);
      const Tensor expected = relu(
          conv2d(x.to(kFloat64), w.to(kFloat64), with_bias ? b.to(kFloat64) : Tensor(), c.opts));
      ASSERT_EQ(y.sizes(), expected.sizes());
      EXPECT_EQ(y.dtype(), kFloat32);
      EXPECT_TRUE(all_close(y, values_of(expected), 1e-5, 1e-5));
      // The fused op keeps the layout the plain convolution chooses.
      EXPECT_EQ(
          y.is_contiguous(MemoryFormat::channels_last),
          conv2d(x, w, b, c.opts).is_contiguous(MemoryFormat::channels_last));
    }
}

/// sum(conv2d_relu(x, w, b) * r).backward() against float64: the gradient through the ReLU
/// is r where the float32 output is positive (the mask taken from that output, so that values
/// at the kink cannot disagree), pushed through a float64 convolution's own backward.
void check_gradients(const Case& c, bool input_grad, bool with_bias, uint64_t seed) {
  Tensor x = input_of(c, seed).requires_grad_(input_grad);
  Tensor w =
      random_tensor({c.o, c.c / c.opts.groups, c.k, c.k}, -0.5, 0.5, seed + 1).requires_grad_();
  Tensor b = with_bias ? random_tensor({c.o}, -0.5, 0.5, seed + 2).requires_grad_() : Tensor();
  const Tensor y = F::conv2d(x, w, b, c.opts, F::Activation::ReLU);
  const Tensor r = random_tensor(y.sizes(), -1, 1, seed + 3);
  (y * r).sum().backward();

  Tensor x64 = x.detach().to(kFloat64).requires_grad_();
  Tensor w64 = w.detach().to(kFloat64).requires_grad_();
  Tensor b64 = with_bias ? b.detach().to(kFloat64).requires_grad_() : Tensor();
  const Tensor dz = r.to(kFloat64) * gt(y.detach(), 0).to(kFloat64);
  (conv2d(x64, w64, b64, c.opts) * dz).sum().backward();
  const double tol = 1e-5 * std::sqrt(double(c.c * c.k * c.k * c.n * c.h * c.w));
  if (input_grad)
    EXPECT_TRUE(all_close(x.grad(), values_of(x64.grad()), 1e-4, tol)) << "input";
  else
    EXPECT_FALSE(x.grad().defined());
  EXPECT_TRUE(all_close(w.grad(), values_of(w64.grad()), 1e-4, tol)) << "weight";
  if (with_bias) EXPECT_TRUE(all_close(b.grad(), values_of(b64.grad()), 1e-4, tol)) << "bias";
}

TEST(ConvRelu, Float32GradientsMatchFloat64) {
  uint64_t seed = 100;
  for (const Case& c : kCases)
    for (bool input_grad : {true, false})
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(
            ::testing::Message() << c.name << " input grad " << input_grad << " bias "
                                 << with_bias);
        check_gradients(c, input_grad, with_bias, seed);
        seed += 4;
      }
}

TEST(ConvRelu, Gradcheck) {
  testing::expect_gradcheck(
      "conv2d_relu",
      [](const auto& v) {
        return F::conv2d(
            v[0], v[1], v[2], {.stride = {2, 1}, .padding = {1, 1}}, F::Activation::ReLU);
      },
      {testing::random_tensor({2, 2, 5, 4}, -1, 1, 31),
       testing::random_tensor({3, 2, 3, 3}, -1, 1, 32),
       testing::random_tensor({3}, -1, 1, 33)});
}

TEST(ConvRelu, NoneIsThePlainConvolution) {
  const Tensor x = random_tensor({1, 2, 5, 5}, -1, 1, 41),
               w = random_tensor({3, 2, 3, 3}, -1, 1, 42);
  const Tensor plain = F::conv2d(x, w, Tensor(), {}, F::Activation::None);
  EXPECT_TRUE(all_close(plain, values_of(conv2d(x, w)), 0, 0));
  EXPECT_LT(min(plain).item<float>(), 0.0f);  // not clamped
}

TEST(ConvRelu, SequentialAndForwardReluMatchTheUnfusedLayers) {
  manual_seed(7);
  nn::Sequential fused;
  auto& conv1 = fused.emplace_back<nn::Conv2d>(nn::Conv2dConfig{
      .in_channels = 1, .out_channels = 32, .kernel_size = {3, 3}, .padding = {1, 1}});
  fused.emplace_back<nn::ReLU>();
  auto& conv2 = fused.emplace_back<nn::Conv2d>(
      nn::Conv2dConfig{.in_channels = 32, .out_channels = 8, .kernel_size = {3, 3}});
  fused.emplace_back<nn::ReLU>();
  const Tensor x = random_tensor({2, 1, 9, 9}, -1, 1, 51);

  const Tensor y = fused.forward(x);
  y.sum().backward();
  const Tensor gw1 = conv1.weight.grad().clone(), gb2 = conv2.bias.grad().clone();
  fused.zero_grad();

  const Tensor unfused = relu(conv2.forward(relu(conv1.forward(x))));
  unfused.sum().backward();
  EXPECT_TRUE(all_close(y, values_of(unfused), 1e-6, 1e-6));
  EXPECT_TRUE(all_close(gw1, values_of(conv1.weight.grad()), 1e-5, 1e-5));
  EXPECT_TRUE(all_close(gb2, values_of(conv2.bias.grad()), 1e-5, 1e-5));

  fused.zero_grad();
  const Tensor direct = conv2.forward_relu(conv1.forward_relu(x));
  EXPECT_TRUE(all_close(direct, values_of(unfused), 1e-6, 1e-6));
}

}  // namespace
}  // namespace ignis
