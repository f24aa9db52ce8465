// ModuleList and Sequential: ownership, indexing and the chained forward (which fuses a
// Linear or Conv2d followed by a ReLU into one node).
#include "ignis/nn/containers.h"

#include <fmt/format.h>

#include <string>
#include <typeinfo>

#include "core/error.h"
#include "ignis/nn/conv.h"
#include "ignis/nn/functional.h"
#include "ignis/nn/layers.h"

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
  for (size_t i = 0; i < modules_.size(); ++i) {
    // A Linear or Conv2d followed by a ReLU runs as one fused node (same values, one pass
    // fewer). Only the exact types: a subclass may override forward.
    Module* m = modules_[i].get();
    const bool relu_next = i + 1 < modules_.size() && typeid(*modules_[i + 1]) == typeid(ReLU);
    if (relu_next && typeid(*m) == typeid(Linear)) {
      const auto& lin = static_cast<const Linear&>(*m);
      y = functional::linear(y, lin.weight, lin.bias, functional::Activation::ReLU);
      ++i;
      continue;
    }
    if (relu_next && typeid(*m) == typeid(Conv2d)) {
      y = static_cast<Conv2d&>(*m).forward_relu(y);
      ++i;
      continue;
    }
    y = m->forward(y);
  }
  return y;
}

}  // namespace ignis::nn
