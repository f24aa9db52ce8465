// Device and model construction shared by the commands (see model_setup.h).
#include "model_setup.h"

#include <fmt/format.h>

#include "options.h"

namespace ig = ignis;

namespace ignis_cli {

ig::Device resolve_device(const std::string& spec, std::string& why) {
  if (spec == "auto") {
    if (ig::cuda::is_available()) {
      why = fmt::format("auto: CUDA is available ({} device(s))", ig::cuda::device_count());
      return ig::Device::cuda(0);
    }
    why = ig::cuda::is_built() ? "auto: built with CUDA but no usable GPU was found"
                               : "auto: this build has no CUDA backend";
    return ig::Device::cpu();
  }
  ig::Device d;
  try {
    d = ig::Device(spec);
  } catch (const ig::Error&) {
    throw UsageError(
        fmt::format("--device '{}': not a device; use auto, cpu, cuda or cuda:N", spec));
  }
  if (d.is_cuda()) {
    if (!ig::cuda::is_available())
      throw UsageError(fmt::format(
          "--device {}: CUDA is not available on this machine or in "
          "this build; use --device cpu (or auto)",
          spec));
    if (d.index >= ig::cuda::device_count())
      throw UsageError(fmt::format(
          "--device {}: only {} CUDA device(s) (cuda:0 .. cuda:{})",
          spec,
          ig::cuda::device_count(),
          ig::cuda::device_count() - 1));
  }
  why = "requested with --device";
  return d;
}

std::unique_ptr<ig::nn::Module> make_model(
    const std::string& name, int64_t channels, int64_t height, int64_t width, int64_t classes) {
  if (name == "mlp")
    return std::make_unique<ig::models::MLP>(
        ig::models::MLPConfig{channels * height * width, 512, classes});
  if (name == "cnn") {
    if (height != width || height % 4 != 0)
      throw UsageError(fmt::format(
          "--model cnn needs square images with a side divisible by 4, "
          "not {}x{}; use --model mlp or a resnet",
          height,
          width));
    return std::make_unique<ig::models::SmallCNN>(
        ig::models::SmallCNNConfig{channels, classes, height});
  }
  // The network of `--preset airbench94` (trained only by the preset; eval and predict load it).
  if (name == "airbench") {
    if (height != 32 || width != 32)
      throw UsageError(fmt::format(
          "the airbench network takes 32x32 images, not {}x{}", height, width));
    return std::make_unique<ig::models::AirbenchNet>(
        ig::models::AirbenchConfig{.in_channels = channels, .num_classes = classes});
  }
  // Small images get the CIFAR stem (3x3 conv, no max-pool) so 28x28 and 32x32 inputs keep
  // enough resolution through four stages; in_channels follows the data (1 for MNIST).
  ig::models::ResNetConfig cfg{
      channels,
      classes,
      height <= 64 ? ig::models::ResNetStem::Cifar : ig::models::ResNetStem::ImageNet};
  if (name == "resnet18") return ig::models::resnet18(cfg);
  if (name == "resnet34") return ig::models::resnet34(cfg);
  if (name == "resnet50") return ig::models::resnet50(cfg);
  throw UsageError(
      fmt::format("model '{}' is unknown; use mlp, cnn, resnet18, resnet34 or resnet50", name));
}

}  // namespace ignis_cli
