// STUB: the safetensors reader and writer arrive next.
#include "core/error.h"
#include "ignis/io.h"

namespace ignis {
void save(const nn::StateDict&, const std::string& path, const std::map<std::string, std::string>&) {
  throw NotImplementedError("[save] not implemented yet: " + path);
}
void save(const nn::Module& m, const std::string& path, const std::map<std::string, std::string>& meta) {
  save(m.state_dict(), path, meta);
}
TensorFile load_file(const std::string& path) { throw NotImplementedError("[load] not implemented yet: " + path); }
void load(nn::Module& module, const std::string& path, bool strict) {
  module.load_state_dict(load_file(path).tensors, strict);
}
}  // namespace ignis
