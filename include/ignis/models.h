// Ready-made models: the 10 -> 512 -> 10 MLP, a small CNN for 28x28 images, and ResNet-18/34
// (BasicBlock) and ResNet-50 (Bottleneck) with torchvision's state-dict names, a CIFAR stem
// (3x3 conv, no max-pool) for small images or the ImageNet stem, any number of input channels
// and classes.
#pragma once

#include <memory>

#include "ignis/nn/containers.h"
#include "ignis/nn/conv.h"
#include "ignis/nn/layers.h"

namespace ignis::models {

struct MLPConfig {
  int64_t in_features = 10;
  int64_t hidden = 512;
  int64_t num_classes = 10;
};
/// fc2(relu(fc1(x.flatten(1)))).
class MLP : public nn::Module {
 public:
  explicit MLP(const MLPConfig& config = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MLP"; }
  nn::Linear fc1, fc2;
};

struct SmallCNNConfig {
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  int64_t image_size = 28;  ///< must be divisible by 4
};
/// conv(in -> 32, 3x3) -> relu -> max-pool 2 -> conv(32 -> 64, 3x3) -> relu -> max-pool 2 ->
/// fc(64 * (s/4)^2 -> 128) -> relu -> fc(128 -> classes).
class SmallCNN : public nn::Module {
 public:
  explicit SmallCNN(const SmallCNNConfig& config = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "SmallCNN"; }
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};

enum class ResNetStem { Cifar, ImageNet };
struct ResNetConfig {
  int64_t in_channels = 3;
  int64_t num_classes = 1000;
  ResNetStem stem = ResNetStem::ImageNet;
};

/// conv3x3 -> bn -> relu -> conv3x3 -> bn, plus the (downsampled) input, -> relu.
class BasicBlock : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in_planes, int64_t planes, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BasicBlock"; }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  std::unique_ptr<nn::Sequential> downsample;  ///< conv1x1 + bn when the shape changes
};

/// conv1x1 -> bn -> relu -> conv3x3 (stride) -> bn -> relu -> conv1x1 (x4) -> bn, + input.
class Bottleneck : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in_planes, int64_t planes, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Bottleneck"; }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
  std::unique_ptr<nn::Sequential> downsample;
};

/// torchvision's ResNet: conv1, bn1, (maxpool), layer1..layer4, avgpool, fc. Convolutions are
/// initialised kaiming_normal_(fan_out, relu), batch norms to (1, 0), as torchvision does.
class ResNet : public nn::Module {
 public:
  enum class Block { Basic, Bottleneck };
  ResNet(Block block, const std::array<int64_t, 4>& layers, const ResNetConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ResNet"; }

  ResNetConfig config;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Sequential layer1, layer2, layer3, layer4;
  nn::Linear fc;
};

std::unique_ptr<ResNet> resnet18(const ResNetConfig& config = {});
std::unique_ptr<ResNet> resnet34(const ResNetConfig& config = {});
std::unique_ptr<ResNet> resnet50(const ResNetConfig& config = {});

}  // namespace ignis::models
