// What `ignis train`, `ignis eval` and `ignis bench` share to get a model running: the device
// from --device, and the model from its name and the data it will see.
#pragma once

#include <ignis/ignis.h>

#include <memory>
#include <string>

#include "train_data.h"

namespace ignis_cli {

/// --device: auto picks CUDA when a device is usable; `why` says why, for the log. Throws
/// UsageError for a malformed or absent device.
ignis::Device resolve_device(const std::string& spec, std::string& why);

/// mlp, cnn, resnet18/34/50 for images of `channels` x `height` x `width` and `classes`
/// classes. Throws UsageError when the model cannot take that shape.
std::unique_ptr<ignis::nn::Module> make_model(
    const std::string& name, int64_t channels, int64_t height, int64_t width, int64_t classes);

/// The model for the data set `d` describes.
inline std::unique_ptr<ignis::nn::Module> make_model(const std::string& name, const TrainData& d) {
  return make_model(name, d.channels, d.height, d.width, int64_t(d.classes.size()));
}

}  // namespace ignis_cli
