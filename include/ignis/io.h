// Saving and loading tensors and models in the safetensors format (a little-endian u64
// header length, a JSON header mapping names to dtype/shape/data_offsets plus optional
// "__metadata__", then raw little-endian data). Keys and layouts are PyTorch's, so a file
// written here loads with safetensors/PyTorch and the reverse. Files are written to a
// temporary name and renamed, so a crash never leaves a half-written file where a good one
// was. Loading treats the file as untrusted: every offset, size and dtype is checked.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ignis/nn/module.h"
#include "ignis/tensor.h"

namespace ignis {

/// Named tensors in file order plus string metadata.
struct TensorFile {
  nn::StateDict tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes tensors (any device; copied to the CPU) to path. Throws IOError naming the path.
void save(const nn::StateDict& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});
/// Writes module.state_dict().
void save(const nn::Module& module, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});
/// Reads a whole safetensors file (tensors on the CPU).
TensorFile load_file(const std::string& path);
/// Loads a safetensors file into module (strict: missing, unexpected and mis-shaped keys are
/// reported together, as load_state_dict does).
void load(nn::Module& module, const std::string& path, bool strict = true);
/// Replaces path with `bytes` the way save() writes: a temporary file next to it, fsynced,
/// renamed over it, then the directory fsynced, so a crash or a full disk leaves either the
/// old file or the new one. For the small text files that accompany a model (configs, logs).
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace ignis
