// Ready-made models: output shapes, parameter counts and state-dict keys (torchvision's
// ResNet names, checked against the architecture's own arithmetic), and a training step that
// reduces the loss.
#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace {
int64_t count_params(nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}
}  // namespace

TEST(Models, MLPAndSmallCNNShapesAndCounts) {
  models::MLP mlp;
  EXPECT_EQ(mlp(randn({4, 10})).sizes(), (Shape{4, 10}));
  EXPECT_EQ(count_params(mlp), 10 * 512 + 512 + 512 * 10 + 10);
  models::SmallCNN cnn;
  EXPECT_EQ(cnn(randn({2, 1, 28, 28})).sizes(), (Shape{2, 10}));
  EXPECT_EQ(count_params(cnn), (1 * 9 * 32 + 32) + (32 * 9 * 64 + 64) + (3136 * 128 + 128) + (128 * 10 + 10));
  EXPECT_THROW_MSG(models::SmallCNN({.image_size = 30}), ValueError, "[SmallCNN] image_size must be a positive multiple of 4");
}

TEST(Models, ResNetNamesAndCountsFollowTorchvision) {
  auto r18 = models::resnet18({.num_classes = 10, .stem = models::ResNetStem::Cifar});
  auto sd = r18->state_dict();
  // torchvision's resnet18 has 122 state-dict entries (62 parameters, 60 buffers).
  EXPECT_EQ(sd.size(), 122u);
  for (const char* key : {"conv1.weight", "bn1.num_batches_tracked", "layer1.0.conv1.weight",
                          "layer2.0.downsample.0.weight", "layer2.0.downsample.1.running_var",
                          "layer4.1.bn2.bias", "fc.weight", "fc.bias"})
    EXPECT_TRUE(sd.contains(key)) << key;
  EXPECT_FALSE(sd.contains("layer1.0.downsample.0.weight"));
  // 11,173,962 parameters for 10 classes with the 3x3 CIFAR stem (11,689,512 - 9408 + 1728 -
  // 512*990 - 990 for the ImageNet version with 1000 classes).
  EXPECT_EQ(count_params(*r18), 11173962);
  EXPECT_EQ((*r18)(randn({2, 3, 32, 32})).sizes(), (Shape{2, 10}));
  auto r50 = models::resnet50();
  EXPECT_EQ(count_params(*r50), 25557032);  // torchvision resnet50
  EXPECT_EQ(r50->state_dict().size(), 320u);
  auto r34 = models::resnet34({.in_channels = 1, .num_classes = 5});
  EXPECT_EQ(r34->conv1.weight.sizes(), (Shape{64, 1, 7, 7}));
  EXPECT_EQ((*r34)(randn({1, 1, 64, 64})).sizes(), (Shape{1, 5}));
}

TEST(Models, ResNetTrainingStepLowersTheLoss) {
  manual_seed(3);
  auto net = models::resnet18({.num_classes = 4, .stem = models::ResNetStem::Cifar});
  optim::SGD opt(net->parameters(), {.lr = 0.05, .momentum = 0.9});
  Tensor x = randn({8, 3, 16, 16});
  Tensor y = randint(0, 4, {8});
  double first = 0, last = 0;
  for (int step = 0; step < 5; ++step) {
    Tensor loss = nn::functional::cross_entropy((*net)(x), y);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  EXPECT_LT(last, first);
  for (const auto& [name, p] : net->named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
}
