// Ready-made models: the 10 -> 512 -> 10 MLP, a small CNN for 28x28 images, and ResNet-18/34
// (BasicBlock) and ResNet-50 (Bottleneck) with torchvision's state-dict names, a CIFAR stem
// (3x3 conv, no max-pool) for small images or the ImageNet stem, any number of input channels
// and classes; and the airbench network with its whitening set-up, test-time augmentation and
// training recipe (Airbench94Trainer).
#pragma once

#include <array>
#include <memory>
#include <optional>

#include "ignis/nn/containers.h"
#include "ignis/nn/conv.h"
#include "ignis/nn/layers.h"
#include "ignis/optim/lookahead.h"
#include "ignis/optim/lr_scheduler.h"
#include "ignis/optim/sgd.h"

namespace ignis::cuda {
class CapturedStep;  // ignis/cuda_graph.h
}  // namespace ignis::cuda

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

// ---- The airbench network (CIFAR-10 speed recipes) -------------------------------------------
struct AirbenchConfig {
  int64_t in_channels = 3;
  int64_t num_classes = 10;
  std::array<int64_t, 3> widths{64, 256, 256};
  double batchnorm_momentum = 0.4;  ///< PyTorch's convention: the weight of the new batch
  double batchnorm_eps = 1e-12;
  double output_scale = 1.0 / 9;
  int64_t whiten_kernel = 2;  ///< the whitening layer's patch size
};

/// conv3x3 -> max-pool 2 -> bn -> gelu -> conv3x3 -> bn -> gelu. The convolutions have no
/// bias and start as identities on their first inputs (nn::init::dirac_); the batch norms'
/// weights stay 1 (requires_grad false), only their biases train.
class AirbenchBlock : public nn::Module {
 public:
  AirbenchBlock(Module* parent, std::string name, int64_t in, int64_t out,
                const AirbenchConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AirbenchBlock"; }
  nn::Conv2d conv1;
  nn::BatchNorm2d norm1;
  nn::Conv2d conv2;
  nn::BatchNorm2d norm2;
};

/// The 8-layer network of Keller Jordan's airbench94 (after hlb-CIFAR10 and Page's ResNet
/// speed runs): a frozen patch-whitening 2x2 convolution (`whiten`, 2 C k^2 filters with a
/// trainable bias) -> gelu -> block1..block3 -> max-pool 3 -> `head` (linear, no bias) scaled by
/// output_scale. For 32x32 inputs the last max-pool sees 3x3. State-dict names are those of
/// bench/airbench_torch.py, its PyTorch twin.
class AirbenchNet : public nn::Module {
 public:
  explicit AirbenchNet(const AirbenchConfig& config = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AirbenchNet"; }
  /// Sets whiten.weight from the 2x2 (whiten_kernel) patches of `images` [N, C, H, W] (already
  /// normalised): with the patch covariance E[p p^T] = V diag(L) V^T (eigenvalues descending),
  /// filter j is V[:, j] / sqrt(L_j + eps), followed by the same filters negated, so gelu
  /// passes both signs of every whitened direction.
  void init_whitening(const Tensor& images, double eps = 5e-4);

  AirbenchConfig config;
  nn::Conv2d whiten;
  AirbenchBlock block1, block2, block3;
  nn::Linear head;
};

// ---- The airbench94 training recipe ----------------------------------------------------------
struct Airbench94Options {
  double lr = 11.5;              ///< per 1024 samples, before dividing by the step gain below
  double momentum = 0.85;        ///< Nesterov
  double weight_decay = 0.0153;  ///< per 1024 samples, decoupled from the lr
  double bias_lr_scale = 64;     ///< the batch norms' biases train at this multiple of the lr
  double label_smoothing = 0.2;
  int64_t whiten_bias_epochs = 3;  ///< the whitening layer's bias trains in these first epochs
  int64_t lookahead_every = 5;
  double warmup_fraction = 0.23, start_factor = 0.2, end_factor = 0.07;
  std::optional<DType> autocast;  ///< the forward pass's low dtype (amp::autocast), or none
  /// On a CUDA device, the step's forward, loss, backward and SGD update are captured into a
  /// CUDA graph after a few eager steps and replayed (cuda::capture_step); the schedule and
  /// the lookahead run between replays, and the graph is captured anew when the whitening
  /// bias stops training. A step the graph cannot hold says so in one line and runs eagerly.
  bool cuda_graph = true;
};

/// Keller Jordan's airbench94 training procedure for an AirbenchNet whose whitening layer is
/// already set (`ignis train --preset airbench94` runs it; bench/airbench_torch.py is the same
/// in PyTorch). The learning rate and weight decay are given per 1024 samples and divided by
/// the Nesterov step gain 1 + 1/(1 - momentum), so the step size does not move with the
/// momentum: SGD gets lr' = lr / (1024 gain) and, per group, weight_decay = (weight_decay
/// batch / (1024 gain)) / group lr, making lr x decay the same for both groups — the batch
/// norms' biases (at bias_lr_scale x lr') and every other trainable tensor. The lr factor
/// rises linearly from start_factor to 1 over the first warmup_fraction of the steps, then
/// falls to end_factor at the last (LambdaLR, stepped per batch).
class Airbench94Trainer {
 public:
  Airbench94Trainer(AirbenchNet& model, int64_t batch_size, int64_t total_steps,
                    const Airbench94Options& options = {});
  Airbench94Trainer(const Airbench94Trainer&) = delete;
  Airbench94Trainer& operator=(const Airbench94Trainer&) = delete;
  ~Airbench94Trainer();
  /// Call before each epoch's steps: the whitening bias trains only in the first epochs.
  void begin_epoch(int64_t epoch);
  struct StepResult {
    Tensor logits, loss;  ///< loss: the batch's summed, label-smoothed cross-entropy
    bool done = false;    ///< the last of total_steps was taken
  };
  /// One step on (x, y): forward and loss (under autocast when set), backward, SGD, the
  /// schedule; after every lookahead_every-th step the weights (and batch-norm statistics)
  /// move onto their moving average with decay 0.95^lookahead_every (step / total)^3
  /// (optim::EmaLookahead), and after the last step onto the average itself (decay 1).
  /// From a CUDA graph (options.cuda_graph), loss and logits are float32 views of the graph's
  /// output, without autograd history, overwritten by the next step.
  StepResult step(const Tensor& x, const Tensor& y);
  /// True while the steps replay a captured CUDA graph.
  bool step_in_cuda_graph() const;
  int64_t steps_taken() const { return step_; }
  /// The schedule's lr factor after `step` steps.
  double lr_factor(int64_t step) const;
  optim::SGD& optimizer() { return *sgd_; }

 private:
  /// Forward and loss (under autocast when set), backward, SGD: what a CUDA graph holds.
  Tensor optimize(const Tensor& x, const Tensor& y, Tensor& logits);

  AirbenchNet& model_;
  Airbench94Options options_;
  int64_t total_steps_, warmup_steps_, step_ = 0;
  std::unique_ptr<optim::SGD> sgd_;
  std::unique_ptr<optim::LambdaLR> schedule_;
  std::unique_ptr<optim::EmaLookahead> lookahead_;
  std::unique_ptr<cuda::CapturedStep> graphed_;  // made on the first CUDA step
};

/// airbench's test-time augmentation: the logits of `model` averaged over views of the image
/// batch x [N, C, H, W] (float32): level 0 the image alone; level 1 the image and its mirror
/// image (0.5 each); level 2 half of level 1 plus half the mean of level 1 on the image moved
/// one pixel down-right and one pixel up-left, borders reflected (PyTorch's F.pad(x, 1,
/// 'reflect') cropped at [0:H, 0:W] and [2:H+2, 2:W+2]). 16-bit logits (under autocast) are
/// averaged in float32.
Tensor tta_logits(nn::Module& model, const Tensor& x, int level);

/// E[p p^T] of all k x k patches (stride 1, no padding) of `images` [N, C, H, W], each patch a
/// C k^2 vector in (channel, row, column) order: a float64 [C k^2, C k^2] matrix on the CPU.
Tensor patch_covariance(const Tensor& images, int64_t kernel);

}  // namespace ignis::models
