// Channels-last on the GPU against the CPU: transfers keep the layout; cuDNN convolutions with
// channels-last input and weight (a model after Module::to(channels_last)) run NHWC, return
// channels-last results and gradients, and match the CPU; ResNet-18 trains one step in
// channels-last with the CPU's values. Skipped without a device.
#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {

using testing::kGpu;
using testing::matches_cpu;
using testing::random_tensor;
constexpr MemoryFormat kCL = MemoryFormat::channels_last;

TEST(CudaChannelsLast, TransfersKeepTheLayout) {
  IGNIS_REQUIRE_CUDA();
  const Tensor x = random_tensor({2, 3, 5, 4}, -1, 1, 1).to(kCL);
  const Tensor g = x.to(kGpu);
  EXPECT_EQ(g.strides(), x.strides());
  EXPECT_TRUE(testing::equals_cpu(g, x));
  const Tensor back = g.cpu();
  EXPECT_EQ(back.strides(), x.strides());
  EXPECT_TRUE(testing::all_close(back, testing::values_of(x), 0, 0));
  // A layout that is not dense lands contiguous (PyTorch's preserve rule), with its values.
  const Tensor sliced = x.slice(3, 0, std::nullopt, 2);
  EXPECT_TRUE(testing::equals_cpu(sliced.to(kGpu), sliced.contiguous()));
}

TEST(CudaChannelsLast, ConvWithChannelsLastInputAndWeightMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  struct Case {
    const char* name;
    Shape x, w;
    Conv2dOptions o;
  };
  const Case cases[] = {
      {"3x3 pad 1", {2, 16, 9, 8}, {32, 16, 3, 3}, {.padding = {1, 1}}},
      {"stride 2", {2, 8, 11, 10}, {16, 8, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}}},
      {"1-channel stem", {2, 1, 12, 12}, {8, 1, 3, 3}, {.padding = {1, 1}}},
      {"groups 2", {2, 4, 7, 7}, {6, 2, 3, 3}, {.padding = {1, 1}, .groups = 2}},
      {"same, even kernel", {2, 3, 7, 6}, {4, 3, 4, 2}, {.padding_mode = "same"}},
  };
  for (const Case& c : cases)
    for (DType t : {kFloat32, kFloat64}) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(t));
      const Tensor x0 = random_tensor(c.x, -1, 1, 2), w0 = random_tensor(c.w, -0.5, 0.5, 3);
      const Tensor b0 = random_tensor({c.w[0]}, -0.5, 0.5, 4);
      std::vector<Tensor> out[2];
      for (int on_gpu = 0; on_gpu < 2; ++on_gpu) {
        const Device d = on_gpu ? kGpu : Device::cpu();
        Tensor x = x0.to(d, t).to(kCL).requires_grad_();
        Tensor w = w0.to(d, t).to(kCL).requires_grad_();
        Tensor b = b0.to(d, t).requires_grad_();
        const Tensor y = conv2d(x, w, b, c.o);
        EXPECT_TRUE(y.is_contiguous(kCL)) << d.str() << ": the result is not channels-last";
        const Tensor up = random_tensor(y.sizes(), -1, 1, 5).to(d, t);
        (y * up).sum().backward();
        EXPECT_TRUE(x.grad().is_contiguous(kCL)) << d.str();
        EXPECT_TRUE(w.grad().is_contiguous(kCL)) << d.str();
        out[on_gpu] = {y.detach(), x.grad(), w.grad(), b.grad()};
      }
      const double tol = t == kFloat64 ? 1e-10 : 2e-5;
      for (size_t i = 0; i < out[0].size(); ++i)
        EXPECT_TRUE(matches_cpu(out[1][i], out[0][i], tol, tol)) << "tensor " << i;
    }
}

TEST(CudaChannelsLast, ResNet18StepMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  std::vector<Tensor> results[2];
  for (int on_gpu = 0; on_gpu < 2; ++on_gpu) {
    const Device d = on_gpu ? kGpu : Device::cpu();
    manual_seed(5);
    auto net = models::resnet18({.num_classes = 10, .stem = models::ResNetStem::Cifar});
    net->to(d);
    net->to(kCL);
    const Tensor x = random_tensor({4, 3, 32, 32}, -1, 1, 6).to(d, kFloat32).to(kCL);
    const Tensor y = tensor(std::vector<int64_t>{1, 3, 5, 7}).to(d);
    const Tensor logits = (*net)(x);
    nn::functional::cross_entropy(logits, y).backward();
    results[on_gpu].push_back(logits.detach());
    for (const auto& [name, p] : net->named_parameters()) {
      if (p.dim() == 4) EXPECT_TRUE(p.grad().is_contiguous(kCL)) << d.str() << " " << name;
      results[on_gpu].push_back(p.grad());
    }
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  // float32 through 2.2 M ReLUs: a pre-activation within rounding of zero may take the other
  // side on one device and move a deep gradient by more than 1e-4; a layout mistake moves
  // values by far more than the tolerance of CudaTraining.ResNet18TrainsLikeTheCpu used here.
  for (size_t i = 0; i < results[0].size(); ++i)
    EXPECT_TRUE(matches_cpu(results[1][i], results[0][i], 5e-3, 5e-3)) << "tensor " << i;
}

}  // namespace
}  // namespace ignis
