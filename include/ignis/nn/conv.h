// Convolution, normalisation and pooling layers (PyTorch's Conv2d, ConvTranspose2d,
// BatchNorm1d/2d, LayerNorm, GroupNorm, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d). Parameter
// and buffer names, shapes and default initialisation follow PyTorch so state dicts move
// between the two.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ignis/nn/module.h"
#include "ignis/nn_ops.h"

namespace ignis::distributed {
class ProcessGroup;
}

namespace ignis::nn {

struct Conv2dConfig {
  int64_t in_channels = 0, out_channels = 0;
  Size2 kernel_size{1, 1};
  Size2 stride{1, 1};
  Size2 padding{0, 0};
  std::string padding_mode;  ///< "same" or "valid" instead of numeric padding
  Size2 dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};

/// 2-D convolution; weight [out, in / groups, kH, kW], bias [out]. Default init as PyTorch:
/// kaiming_uniform_(a = sqrt(5)) for the weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for bias.
class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dConfig& config);
  Conv2d(Module* parent, std::string name, const Conv2dConfig& config);
  /// Shorthand: square kernel, stride, padding.
  Conv2d(Module* parent, std::string name, int64_t in, int64_t out, int64_t kernel,
         int64_t stride = 1, int64_t padding = 0, bool bias = true);
  Tensor forward(const Tensor& x) override;
  /// relu(forward(x)) as one node (nn::functional::conv2d with Activation::ReLU).
  Tensor forward_relu(const Tensor& x);
  void reset_parameters();
  std::string type_name() const override { return "Conv2d"; }
  std::string extra_repr() const override;

  Conv2dConfig config;
  Tensor weight, bias;

 private:
  void init();
};

struct ConvTranspose2dConfig {
  int64_t in_channels = 0, out_channels = 0;
  Size2 kernel_size{1, 1};
  Size2 stride{1, 1};
  Size2 padding{0, 0};
  Size2 output_padding{0, 0};
  Size2 dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};

/// Transposed 2-D convolution; weight [in, out / groups, kH, kW] as PyTorch.
class ConvTranspose2d : public Module {
 public:
  explicit ConvTranspose2d(const ConvTranspose2dConfig& config);
  ConvTranspose2d(Module* parent, std::string name, const ConvTranspose2dConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ConvTranspose2d"; }
  std::string extra_repr() const override;

  ConvTranspose2dConfig config;
  Tensor weight, bias;

 private:
  void init();
};

struct BatchNormConfig {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
};

/// Batch normalisation over dim 1 of [N, C] or [N, C, L] (BatchNorm1d) and [N, C, H, W]
/// (BatchNorm2d): weight (ones), bias (zeros), running_mean (zeros), running_var (ones),
/// num_batches_tracked (int64 0). Training mode uses batch statistics and updates the running
/// ones; eval mode uses the running ones (batch statistics when not tracked). With sync_group
/// set (SyncBatchNorm, convert_sync_batchnorm in ignis/nn/parallel.h) the batch statistics
/// are those of the batches of all the group's ranks together.
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, const BatchNormConfig& config, int64_t expected_dims_lo,
            int64_t expected_dims_hi, const char* type);
  BatchNorm(Module* parent, std::string name, int64_t num_features, const BatchNormConfig& config,
            int64_t expected_dims_lo, int64_t expected_dims_hi, const char* type);
  Tensor forward(const Tensor& x) override;
  /// relu(forward(x) + residual), or relu(forward(x)) without a residual, through the fused
  /// batch_norm_relu (one node, one pass each way); with sync_group in training mode, the
  /// composition of SyncBatchNorm's forward, add and relu.
  Tensor forward_relu(const Tensor& x, const Tensor& residual = Tensor());
  /// gelu(forward(x)) through the fused batch_norm_gelu (one node, one pass each way); with
  /// sync_group in training mode, SyncBatchNorm's forward then gelu.
  Tensor forward_gelu(const Tensor& x);
  std::string type_name() const override { return type_; }
  std::string extra_repr() const override;

  int64_t num_features;
  BatchNormConfig config;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  /// The ranks whose batches share statistics in training mode; null: this process alone.
  std::shared_ptr<distributed::ProcessGroup> sync_group;

 private:
  void init();
  /// Checks x, counts the batch (training), and says whether batch statistics normalise.
  bool begin_forward(const Tensor& x);
  int64_t dims_lo_, dims_hi_;
  const char* type_;
};

class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, const BatchNormConfig& config = {})
      : BatchNorm(num_features, config, 2, 3, "BatchNorm1d") {}
  BatchNorm1d(Module* parent, std::string name, int64_t num_features,
              const BatchNormConfig& config = {})
      : BatchNorm(parent, std::move(name), num_features, config, 2, 3, "BatchNorm1d") {}
};

class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, const BatchNormConfig& config = {})
      : BatchNorm(num_features, config, 4, 4, "BatchNorm2d") {}
  BatchNorm2d(Module* parent, std::string name, int64_t num_features,
              const BatchNormConfig& config = {})
      : BatchNorm(parent, std::move(name), num_features, config, 4, 4, "BatchNorm2d") {}
};

/// Normalises over the trailing normalized_shape; weight ones, bias zeros.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  LayerNorm(Module* parent, std::string name, Shape normalized_shape, double eps = 1e-5,
            bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LayerNorm"; }
  Shape normalized_shape;
  double eps;
  Tensor weight, bias;

 private:
  void init(bool affine);
};

/// Normalises num_groups channel groups; weight ones, bias zeros ([num_channels]).
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  GroupNorm(Module* parent, std::string name, int64_t num_groups, int64_t num_channels,
            double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GroupNorm"; }
  int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;

 private:
  void init(bool affine);
};

/// Pooling layers hold no state; their options are those of ignis/nn_ops.h.
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const Pool2dOptions& options) : options(options) {}
  MaxPool2d(Module* parent, std::string name, const Pool2dOptions& options)
      : Module(parent, std::move(name)), options(options) {}
  Tensor forward(const Tensor& x) override { return max_pool2d(x, options); }
  std::string type_name() const override { return "MaxPool2d"; }
  Pool2dOptions options;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const Pool2dOptions& options) : options(options) {}
  AvgPool2d(Module* parent, std::string name, const Pool2dOptions& options)
      : Module(parent, std::move(name)), options(options) {}
  Tensor forward(const Tensor& x) override { return avg_pool2d(x, options); }
  std::string type_name() const override { return "AvgPool2d"; }
  Pool2dOptions options;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size) : output_size(output_size) {}
  AdaptiveAvgPool2d(Module* parent, std::string name, Size2 output_size)
      : Module(parent, std::move(name)), output_size(output_size) {}
  Tensor forward(const Tensor& x) override { return adaptive_avg_pool2d(x, output_size); }
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
  Size2 output_size;
};

}  // namespace ignis::nn
