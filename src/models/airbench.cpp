// The airbench network of ignis/models.h and its whitening initialisation.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ignis/autograd.h"
#include "ignis/data/transforms.h"
#include "ignis/models.h"
#include "ignis/nn/functional.h"
#include "ignis/nn/init.h"
#include "ignis/nn_ops.h"
#include "ignis/ops.h"

namespace ignis::models {

namespace {
nn::Conv2dConfig same_conv3x3(int64_t in, int64_t out) {
  return {.in_channels = in, .out_channels = out, .kernel_size = {3, 3}, .padding = {1, 1},
          .bias = false};
}
nn::BatchNormConfig norm_config(const AirbenchConfig& c) {
  return {.eps = c.batchnorm_eps, .momentum = c.batchnorm_momentum};
}
/// PyTorch's default init, then the identity on the first `in` output channels.
void dirac_init(nn::Conv2d& conv) {
  Tensor first = conv.weight.narrow(0, 0, std::min(conv.weight.size(0), conv.weight.size(1)));
  nn::init::dirac_(first);
}
}  // namespace

AirbenchBlock::AirbenchBlock(Module* parent, std::string name, int64_t in, int64_t out,
                             const AirbenchConfig& c)
    : Module(parent, std::move(name)),
      conv1(this, "conv1", same_conv3x3(in, out)),
      norm1(this, "norm1", out, norm_config(c)),
      conv2(this, "conv2", same_conv3x3(out, out)),
      norm2(this, "norm2", out, norm_config(c)) {
  dirac_init(conv1);
  dirac_init(conv2);
  norm1.weight.requires_grad_(false);
  norm2.weight.requires_grad_(false);
}

Tensor AirbenchBlock::forward(const Tensor& x) {
  Tensor h = max_pool2d(conv1(x), {.kernel_size = {2, 2}});
  h = norm1.forward_gelu(h);  // gelu(norm1(h)) in one pass each way
  return norm2.forward_gelu(conv2(h));
}

AirbenchNet::AirbenchNet(const AirbenchConfig& c)
    : config(c),
      whiten(this, "whiten",
             {.in_channels = c.in_channels,
              .out_channels = 2 * c.in_channels * c.whiten_kernel * c.whiten_kernel,
              .kernel_size = {c.whiten_kernel, c.whiten_kernel},
              .bias = true}),
      block1(this, "block1", whiten.config.out_channels, c.widths[0], c),
      block2(this, "block2", c.widths[0], c.widths[1], c),
      block3(this, "block3", c.widths[1], c.widths[2], c),
      head(this, "head", c.widths[2], c.num_classes, /*bias=*/false) {
  IGNIS_CHECK(c.whiten_kernel > 0 && c.in_channels > 0 && c.num_classes > 0, ValueError,
              "[AirbenchNet] whiten_kernel, in_channels and num_classes must be positive");
  nn::init::zeros_(whiten.bias);
  whiten.weight.requires_grad_(false);
}

Tensor AirbenchNet::forward(const Tensor& x) {
  Tensor h = gelu(whiten(x));
  h = block3(block2(block1(h)));
  h = max_pool2d(h, {.kernel_size = {3, 3}}).flatten(1);
  return head(h) * config.output_scale;
}

Tensor tta_logits(nn::Module& model, const Tensor& x, int level) {
  IGNIS_CHECK(level >= 0 && level <= 2, ValueError,
              "[tta_logits] level must be 0, 1 or 2, got {}", level);
  // Logits of a 16-bit model (autocast) are averaged in float32, so close classes keep
  // their order.
  auto logits_of = [&](const Tensor& v) {
    const Tensor y = model(v);
    return y.dtype() == kBFloat16 || y.dtype() == kFloat16 ? y.to(kFloat32) : y;
  };
  auto mirrored = [&](const Tensor& v) {
    return logits_of(v) * 0.5 + logits_of(data::hflip(v)) * 0.5;
  };
  if (level == 0) return logits_of(x);
  const Tensor logits = mirrored(x);
  if (level == 1) return logits;
  const auto reflect = data::PadMode::Reflect;
  const Tensor shifted =
      mirrored(data::translate(x, 1, 1, reflect)) + mirrored(data::translate(x, -1, -1, reflect));
  return logits * 0.5 + shifted * 0.25;
}

Tensor patch_covariance(const Tensor& images, int64_t k) {
  IGNIS_CHECK(images.defined() && images.dim() == 4, ShapeError,
              "[patch_covariance] expected images [N, C, H, W]");
  IGNIS_CHECK(k > 0 && images.size(2) >= k && images.size(3) >= k, ValueError,
              "[patch_covariance] a {}x{} patch does not fit {}x{} images", k, k,
              images.size(2), images.size(3));
  NoGradGuard no_grad;
  const int64_t C = images.size(1), Ho = images.size(2) - k + 1, Wo = images.size(3) - k + 1;
  const int64_t features = C * k * k;
  // Chunks of images bound the patch matrix's memory.
  Tensor sum = zeros({features, features}, TensorOptions(kFloat64));
  const int64_t chunk = 256;
  for (int64_t start = 0; start < images.size(0); start += chunk) {
    // In float64: the smallest eigen-directions (the ones whitening scales up most) lose
    // visible precision when millions of float32 products are summed.
    const Tensor x = images.narrow(0, start, std::min(chunk, images.size(0) - start))
                         .to(kFloat64);
    std::vector<Tensor> shifted;
    for (int64_t dy = 0; dy < k; ++dy)
      for (int64_t dx = 0; dx < k; ++dx) shifted.push_back(x.narrow(2, dy, Ho).narrow(3, dx, Wo));
    // [n, C, k*k, Ho, Wo] -> [n, Ho, Wo, C, k*k] -> one row per patch.
    const Tensor patches = stack(shifted, 2).permute({0, 3, 4, 1, 2}).reshape({-1, features});
    sum.add_(mm(patches.transpose(0, 1), patches).to(Device::cpu()));
  }
  const int64_t n = images.size(0) * Ho * Wo;
  return n > 0 ? sum / double(n) : sum;
}

void AirbenchNet::init_whitening(const Tensor& images, double eps) {
  IGNIS_CHECK(images.defined() && images.dim() == 4 && images.size(1) == config.in_channels,
              ShapeError, "[AirbenchNet::init_whitening] expected images [N, {}, H, W]",
              config.in_channels);
  IGNIS_CHECK(images.size(0) > 0, ValueError,
              "[AirbenchNet::init_whitening] needs at least one image");
  const int64_t k = config.whiten_kernel, features = config.in_channels * k * k;
  auto [eigenvalues, eigenvectors] = linalg_eigh(patch_covariance(images, k));
  const double* L = eigenvalues.data_ptr<double>();
  const double* v = eigenvectors.data_ptr<double>();  // row-major, contiguous
  // Row j of the first half: the eigenvector of the j-th largest eigenvalue, scaled.
  std::vector<double> filters(size_t(2 * features * features));
  for (int64_t j = 0; j < features; ++j) {
    const int64_t column = features - 1 - j;  // LAPACK's order is ascending
    const double scale = 1.0 / std::sqrt(L[column] + eps);
    for (int64_t f = 0; f < features; ++f) {
      const double value = v[f * features + column] * scale;
      filters[size_t(j * features + f)] = value;
      filters[size_t((features + j) * features + f)] = -value;
    }
  }
  NoGradGuard no_grad;
  whiten.weight.copy_(tensor(filters, whiten.weight.sizes(), kFloat64));
}

}  // namespace ignis::models
