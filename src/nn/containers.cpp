// ModuleList and Sequential: ownership, indexing and the chained forward.
#include "ignis/nn/containers.h"

#include <fmt/format.h>

#include <string>

#include "core/error.h"

namespace ignis::nn {

void ModuleList::append(std::unique_ptr<Module> module) {
  IGNIS_CHECK(module != nullptr, ValueError, "[{}] cannot append a null module", type_name());
  if (module->parent() != nullptr) {
    // Another module owns it (a member or a container's child): give up the pointer without
    // deleting it, then report.
    const std::string name = module->name();
    (void)module.release();
    throw ValueError(fmt::format("[{}] module '{}' already belongs to another module",
                                 type_name(), name));
  }
  register_module(std::to_string(modules_.size()), module.get());
  modules_.push_back(std::move(module));
}

Module& ModuleList::operator[](int64_t i) const {
  const int64_t n = int64_t(modules_.size());
  IGNIS_CHECK(i >= -n && i < n, IndexError, "[{}] index {} is out of range for {} modules",
              type_name(), i, n);
  return *modules_[size_t(i < 0 ? i + n : i)];
}

void ModuleList::throw_wrong_type(int64_t i) const {
  throw ValueError(fmt::format("[{}] module {} is a {}, not the requested type", type_name(), i,
                               (*this)[i].type_name()));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& m : modules_) y = m->forward(y);
  return y;
}

}  // namespace ignis::nn
