// Convolution, normalisation and pooling layers: parameters, buffers and initialisation as
// PyTorch's; the computation is ignis/nn_ops.h.
#include "ignis/nn/conv.h"
#include "ignis/nn/functional.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "ignis/autograd.h"
#include "nn/sync_batch_norm.h"
#include "ignis/nn/init.h"
#include "ignis/ops.h"

namespace ignis::nn {

namespace {
std::string pair_str(Size2 p) { return fmt::format("({}, {})", p[0], p[1]); }

/// PyTorch's default for conv weights and biases (kaiming_uniform_ with a = sqrt(5)).
void default_conv_init(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1 / std::sqrt(double(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}
}  // namespace

// ---- Conv2d ---------------------------------------------------------------------------------
Conv2d::Conv2d(const Conv2dConfig& c) : config(c) { init(); }
Conv2d::Conv2d(Module* parent, std::string name, const Conv2dConfig& c)
    : Module(parent, std::move(name)), config(c) {
  init();
}
Conv2d::Conv2d(Module* parent, std::string name, int64_t in, int64_t out, int64_t kernel,
               int64_t stride, int64_t padding, bool bias)
    : Conv2d(parent, std::move(name),
             Conv2dConfig{.in_channels = in,
                          .out_channels = out,
                          .kernel_size = {kernel, kernel},
                          .stride = {stride, stride},
                          .padding = {padding, padding},
                          .bias = bias}) {}

void Conv2d::init() {
  const auto& c = config;
  IGNIS_CHECK(c.in_channels > 0 && c.out_channels > 0 && c.groups > 0, ValueError,
              "[Conv2d] in_channels ({}), out_channels ({}) and groups ({}) must be positive",
              c.in_channels, c.out_channels, c.groups);
  IGNIS_CHECK(c.in_channels % c.groups == 0 && c.out_channels % c.groups == 0, ValueError,
              "[Conv2d] in_channels ({}) and out_channels ({}) must be divisible by groups ({})",
              c.in_channels, c.out_channels, c.groups);
  weight = empty({c.out_channels, c.in_channels / c.groups, c.kernel_size[0], c.kernel_size[1]});
  register_parameter("weight", &weight);
  if (c.bias) {
    bias = empty({c.out_channels});
    register_parameter("bias", &bias);
  }
  reset_parameters();
}

void Conv2d::reset_parameters() { default_conv_init(weight, bias); }

namespace {
Conv2dOptions options_of(const Conv2dConfig& c) {
  return {.stride = c.stride,
          .padding = c.padding,
          .padding_mode = c.padding_mode,
          .dilation = c.dilation,
          .groups = c.groups};
}
}  // namespace

Tensor Conv2d::forward(const Tensor& x) { return conv2d(x, weight, bias, options_of(config)); }

Tensor Conv2d::forward_relu(const Tensor& x) {
  return functional::conv2d(x, weight, bias, options_of(config), functional::Activation::ReLU);
}

std::string Conv2d::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", config.in_channels,
                              config.out_channels, pair_str(config.kernel_size),
                              pair_str(config.stride));
  if (!config.padding_mode.empty()) s += fmt::format(", padding={}", config.padding_mode);
  else if (config.padding != Size2{0, 0}) s += ", padding=" + pair_str(config.padding);
  if (config.dilation != Size2{1, 1}) s += ", dilation=" + pair_str(config.dilation);
  if (config.groups != 1) s += fmt::format(", groups={}", config.groups);
  if (!config.bias) s += ", bias=False";
  return s;
}

// ---- ConvTranspose2d ------------------------------------------------------------------------
ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dConfig& c) : config(c) { init(); }
ConvTranspose2d::ConvTranspose2d(Module* parent, std::string name, const ConvTranspose2dConfig& c)
    : Module(parent, std::move(name)), config(c) {
  init();
}

void ConvTranspose2d::init() {
  const auto& c = config;
  IGNIS_CHECK(c.in_channels > 0 && c.out_channels > 0 && c.groups > 0 &&
                  c.in_channels % c.groups == 0 && c.out_channels % c.groups == 0,
              ValueError,
              "[ConvTranspose2d] in_channels ({}) and out_channels ({}) must be positive and "
              "divisible by groups ({})",
              c.in_channels, c.out_channels, c.groups);
  weight = empty({c.in_channels, c.out_channels / c.groups, c.kernel_size[0], c.kernel_size[1]});
  register_parameter("weight", &weight);
  if (c.bias) {
    bias = empty({c.out_channels});
    register_parameter("bias", &bias);
  }
  default_conv_init(weight, bias);
}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  return conv_transpose2d(x, weight, bias,
                          {.stride = config.stride,
                           .padding = config.padding,
                           .output_padding = config.output_padding,
                           .dilation = config.dilation,
                           .groups = config.groups});
}

std::string ConvTranspose2d::extra_repr() const {
  return fmt::format("{}, {}, kernel_size={}, stride={}", config.in_channels, config.out_channels,
                     pair_str(config.kernel_size), pair_str(config.stride));
}

// ---- BatchNorm ------------------------------------------------------------------------------
BatchNorm::BatchNorm(int64_t n, const BatchNormConfig& c, int64_t lo, int64_t hi, const char* type)
    : num_features(n), config(c), dims_lo_(lo), dims_hi_(hi), type_(type) {
  init();
}
BatchNorm::BatchNorm(Module* parent, std::string name, int64_t n, const BatchNormConfig& c,
                     int64_t lo, int64_t hi, const char* type)
    : Module(parent, std::move(name)), num_features(n), config(c), dims_lo_(lo), dims_hi_(hi),
      type_(type) {
  init();
}

void BatchNorm::init() {
  IGNIS_CHECK(num_features > 0, ValueError, "[{}] num_features must be positive, got {}", type_,
              num_features);
  if (config.affine) {
    weight = ones({num_features});
    bias = zeros({num_features});
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
  if (config.track_running_stats) {
    running_mean = zeros({num_features});
    running_var = ones({num_features});
    num_batches_tracked = zeros({}, kInt64);
    register_buffer("running_mean", &running_mean);
    register_buffer("running_var", &running_var);
    register_buffer("num_batches_tracked", &num_batches_tracked);
  }
}

bool BatchNorm::begin_forward(const Tensor& x) {
  IGNIS_CHECK(x.dim() >= dims_lo_ && x.dim() <= dims_hi_, ShapeError,
              "[{}] expected a {}D input, got shape {} ({} dims)", type_,
              dims_lo_ == dims_hi_ ? fmt::format("{}", dims_lo_) : fmt::format("{} or {}", dims_lo_, dims_hi_),
              fmt::format("[{}]", fmt::join(x.sizes(), ", ")), x.dim());
  IGNIS_CHECK(x.size(1) == num_features, ShapeError,
              "[{}] expected {} channels in dim 1, got shape [{}]", type_, num_features,
              fmt::join(x.sizes(), ", "));
  const bool use_batch_stats = is_training() || !config.track_running_stats;
  if (is_training() && config.track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return use_batch_stats;
}

Tensor BatchNorm::forward(const Tensor& x) {
  const bool use_batch_stats = begin_forward(x);
  if (use_batch_stats && sync_group) return detail::sync_batch_norm(*this, x);
  return batch_norm(x, config.track_running_stats ? running_mean : Tensor(),
                    config.track_running_stats ? running_var : Tensor(), weight, bias,
                    use_batch_stats, config.momentum, config.eps);
}

Tensor BatchNorm::forward_relu(const Tensor& x, const Tensor& residual) {
  const bool use_batch_stats = begin_forward(x);
  if (use_batch_stats && sync_group) {
    // The statistics come from collectives between ops; the epilogue stays separate.
    const Tensor y = detail::sync_batch_norm(*this, x);
    return relu(residual.defined() ? add(y, residual) : y);
  }
  return batch_norm_relu(x, config.track_running_stats ? running_mean : Tensor(),
                         config.track_running_stats ? running_var : Tensor(), weight, bias,
                         use_batch_stats, config.momentum, config.eps, residual);
}

Tensor BatchNorm::forward_gelu(const Tensor& x) {
  const bool use_batch_stats = begin_forward(x);
  if (use_batch_stats && sync_group) return gelu(detail::sync_batch_norm(*this, x));
  return batch_norm_gelu(x, config.track_running_stats ? running_mean : Tensor(),
                         config.track_running_stats ? running_var : Tensor(), weight, bias,
                         use_batch_stats, config.momentum, config.eps);
}

std::string BatchNorm::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", num_features,
                     config.eps, config.momentum, config.affine ? "True" : "False",
                     config.track_running_stats ? "True" : "False");
}

// ---- LayerNorm / GroupNorm ------------------------------------------------------------------
LayerNorm::LayerNorm(Shape shape, double eps, bool affine) : normalized_shape(std::move(shape)), eps(eps) {
  init(affine);
}
LayerNorm::LayerNorm(Module* parent, std::string name, Shape shape, double eps, bool affine)
    : Module(parent, std::move(name)), normalized_shape(std::move(shape)), eps(eps) {
  init(affine);
}
void LayerNorm::init(bool affine) {
  if (!affine) return;
  weight = ones(normalized_shape);
  bias = zeros(normalized_shape);
  register_parameter("weight", &weight);
  register_parameter("bias", &bias);
}
Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, normalized_shape, weight, bias, eps); }

GroupNorm::GroupNorm(int64_t g, int64_t c, double eps, bool affine) : num_groups(g), num_channels(c), eps(eps) {
  init(affine);
}
GroupNorm::GroupNorm(Module* parent, std::string name, int64_t g, int64_t c, double eps, bool affine)
    : Module(parent, std::move(name)), num_groups(g), num_channels(c), eps(eps) {
  init(affine);
}
void GroupNorm::init(bool affine) {
  IGNIS_CHECK(num_groups > 0 && num_channels % num_groups == 0, ValueError,
              "[GroupNorm] num_channels ({}) must be divisible by num_groups ({})", num_channels,
              num_groups);
  if (!affine) return;
  weight = ones({num_channels});
  bias = zeros({num_channels});
  register_parameter("weight", &weight);
  register_parameter("bias", &bias);
}
Tensor GroupNorm::forward(const Tensor& x) { return group_norm(x, num_groups, weight, bias, eps); }

}  // namespace ignis::nn
