// The ready-made models of ignis/models.h.
#include "ignis/models.h"

#include "core/error.h"
#include "ignis/autograd.h"
#include "ignis/nn/functional.h"
#include "ignis/nn/init.h"
#include "ignis/nn_ops.h"
#include "ignis/ops.h"

namespace ignis::models {

using nn::BatchNorm2d;
using nn::Conv2d;
using nn::Conv2dConfig;

namespace {
Conv2dConfig conv_cfg(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return {.in_channels = in,
          .out_channels = out,
          .kernel_size = {k, k},
          .stride = {stride, stride},
          .padding = {pad, pad},
          .bias = false};
}

/// conv1x1(stride) + bn, the shortcut of a block whose shape changes.
std::unique_ptr<nn::Sequential> make_downsample(nn::Module* parent, int64_t in, int64_t out,
                                                int64_t stride) {
  if (stride == 1 && in == out) return nullptr;
  auto ds = std::make_unique<nn::Sequential>(parent, "downsample");
  ds->push_back(std::make_unique<Conv2d>(conv_cfg(in, out, 1, stride, 0)));
  ds->push_back(std::make_unique<BatchNorm2d>(out));
  return ds;
}
}  // namespace

// ---- MLP / SmallCNN -------------------------------------------------------------------------
MLP::MLP(const MLPConfig& c)
    : fc1(this, "fc1", c.in_features, c.hidden), fc2(this, "fc2", c.hidden, c.num_classes) {}

Tensor MLP::forward(const Tensor& x) {
  // relu(fc1(x)) as one fused node (nn::functional::linear with an activation).
  return fc2(nn::functional::linear(
      x.dim() > 2 ? x.flatten(1) : x, fc1.weight, fc1.bias, nn::functional::Activation::ReLU));
}

SmallCNN::SmallCNN(const SmallCNNConfig& c)
    : conv1(this, "conv1", c.in_channels, 32, 3, 1, 1),
      conv2(this, "conv2", 32, 64, 3, 1, 1),
      fc1(this, "fc1", 64 * (c.image_size / 4) * (c.image_size / 4), 128),
      fc2(this, "fc2", 128, c.num_classes) {
  IGNIS_CHECK(c.image_size > 0 && c.image_size % 4 == 0, ValueError,
              "[SmallCNN] image_size must be a positive multiple of 4, got {}", c.image_size);
}

Tensor SmallCNN::forward(const Tensor& x) {
  const Pool2dOptions pool{.kernel_size = {2, 2}};
  Tensor h = max_pool2d(conv1.forward_relu(x), pool);  // conv + ReLU as one node
  h = max_pool2d(conv2.forward_relu(h), pool);
  return fc2(
      nn::functional::linear(h.flatten(1), fc1.weight, fc1.bias, nn::functional::Activation::ReLU));
}

// ---- ResNet blocks --------------------------------------------------------------------------
BasicBlock::BasicBlock(int64_t in, int64_t planes, int64_t stride)
    : conv1(this, "conv1", conv_cfg(in, planes, 3, stride, 1)),
      bn1(this, "bn1", planes),
      conv2(this, "conv2", conv_cfg(planes, planes, 3, 1, 1)),
      bn2(this, "bn2", planes),
      downsample(make_downsample(this, in, planes, stride)) {}

// relu(bn(conv(x))) and relu(bn(conv(x)) + identity) are one fused node each
// (BatchNorm::forward_relu): no normalised or summed tensor is kept for backward.
Tensor BasicBlock::forward(const Tensor& x) {
  const Tensor out = conv2(bn1.forward_relu(conv1(x)));
  const Tensor identity = downsample ? (*downsample)(x) : x;
  return bn2.forward_relu(out, identity);
}

Bottleneck::Bottleneck(int64_t in, int64_t planes, int64_t stride)
    : conv1(this, "conv1", conv_cfg(in, planes, 1, 1, 0)),
      bn1(this, "bn1", planes),
      conv2(this, "conv2", conv_cfg(planes, planes, 3, stride, 1)),
      bn2(this, "bn2", planes),
      conv3(this, "conv3", conv_cfg(planes, planes * kExpansion, 1, 1, 0)),
      bn3(this, "bn3", planes * kExpansion),
      downsample(make_downsample(this, in, planes * kExpansion, stride)) {}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor out = bn1.forward_relu(conv1(x));
  out = conv3(bn2.forward_relu(conv2(out)));
  const Tensor identity = downsample ? (*downsample)(x) : x;
  return bn3.forward_relu(out, identity);
}

// ---- ResNet ---------------------------------------------------------------------------------
ResNet::ResNet(Block block, const std::array<int64_t, 4>& layers, const ResNetConfig& c)
    : config(c),
      conv1(this, "conv1",
            c.stem == ResNetStem::Cifar ? conv_cfg(c.in_channels, 64, 3, 1, 1)
                                        : conv_cfg(c.in_channels, 64, 7, 2, 3)),
      bn1(this, "bn1", 64),
      layer1(this, "layer1"),
      layer2(this, "layer2"),
      layer3(this, "layer3"),
      layer4(this, "layer4"),
      fc(this, "fc", 512 * (block == Block::Basic ? BasicBlock::kExpansion : Bottleneck::kExpansion),
         c.num_classes) {
  const int64_t expansion = block == Block::Basic ? BasicBlock::kExpansion : Bottleneck::kExpansion;
  int64_t in = 64;
  nn::Sequential* stages[4] = {&layer1, &layer2, &layer3, &layer4};
  for (int s = 0; s < 4; ++s) {
    const int64_t planes = int64_t(64) << s;
    for (int64_t i = 0; i < layers[size_t(s)]; ++i) {
      const int64_t stride = (s > 0 && i == 0) ? 2 : 1;
      if (block == Block::Basic) stages[s]->push_back(std::make_unique<BasicBlock>(in, planes, stride));
      else stages[s]->push_back(std::make_unique<Bottleneck>(in, planes, stride));
      in = planes * expansion;
    }
  }
  // torchvision's initialisation: kaiming_normal_(fan_out, relu) for convolutions.
  for (auto& [name, m] : named_modules())
    if (auto* conv = dynamic_cast<Conv2d*>(m)) nn::init::kaiming_normal_(conv->weight, 0, "fan_out", "relu");
}

Tensor ResNet::forward(const Tensor& x) {
  Tensor h = bn1.forward_relu(conv1(x));
  if (config.stem == ResNetStem::ImageNet)
    h = max_pool2d(h, {.kernel_size = {3, 3}, .stride = Size2{2, 2}, .padding = {1, 1}});
  h = layer4(layer3(layer2(layer1(h))));
  h = adaptive_avg_pool2d(h, {1, 1}).flatten(1);
  return fc(h);
}

std::unique_ptr<ResNet> resnet18(const ResNetConfig& c) {
  return std::make_unique<ResNet>(ResNet::Block::Basic, std::array<int64_t, 4>{2, 2, 2, 2}, c);
}
std::unique_ptr<ResNet> resnet34(const ResNetConfig& c) {
  return std::make_unique<ResNet>(ResNet::Block::Basic, std::array<int64_t, 4>{3, 4, 6, 3}, c);
}
std::unique_ptr<ResNet> resnet50(const ResNetConfig& c) {
  return std::make_unique<ResNet>(ResNet::Block::Bottleneck, std::array<int64_t, 4>{3, 4, 6, 3}, c);
}

}  // namespace ignis::models
