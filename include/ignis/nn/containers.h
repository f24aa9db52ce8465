// Containers that own their submodules: Sequential (forward chains them) and ModuleList
// (only holds them). Children are named "0", "1", … as in PyTorch, so state-dict keys read
// "features.0.weight". Modules are added as std::unique_ptr (modules cannot move, Note
// [Module registration by pointer]), through push_back or the variadic constructors:
//   nn::Sequential net{this, "net", std::make_unique<nn::Linear>(10, 32),
//                      std::make_unique<nn::ReLU>()};
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ignis/nn/module.h"

namespace ignis::nn {

/// Owns an ordered list of modules registered as "0", "1", ….
class ModuleList : public Module {
 public:
  ModuleList() = default;
  ModuleList(Module* parent, std::string name) : Module(parent, std::move(name)) {}
  template <class... Ms>
  explicit ModuleList(std::unique_ptr<Ms>... modules) {
    (push_back(std::move(modules)), ...);
  }
  template <class... Ms>
  ModuleList(Module* parent, std::string name, std::unique_ptr<Ms>... modules)
      : Module(parent, std::move(name)) {
    (push_back(std::move(modules)), ...);
  }

  /// Appends a root module (ValueError if it already has a parent); returns it.
  template <class M>
  M& push_back(std::unique_ptr<M> module) {
    M& ref = *module;
    append(std::unique_ptr<Module>(std::move(module)));
    return ref;
  }
  /// Constructs an M from args and appends it.
  template <class M, class... Args>
  M& emplace_back(Args&&... args) {
    return push_back(std::make_unique<M>(std::forward<Args>(args)...));
  }
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  /// The i-th module; negative i counts from the end; IndexError when out of range.
  Module& operator[](int64_t i) const;
  /// The i-th module as M (ValueError naming both types when it is not an M).
  template <class M>
  M& at(int64_t i) const {
    auto* m = dynamic_cast<M*>(&(*this)[i]);
    if (!m) throw_wrong_type(i);
    return *m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }
  std::string type_name() const override { return "ModuleList"; }

 protected:
  void append(std::unique_ptr<Module> module);
  [[noreturn]] void throw_wrong_type(int64_t i) const;
  // Declared after the Module base, so destroyed before it: children unregister while the
  // container's registry still exists.
  std::vector<std::unique_ptr<Module>> modules_;
};

/// A ModuleList whose forward passes the input through each module in turn (each must
/// implement the single-input forward). An empty Sequential returns its input.
class Sequential : public ModuleList {
 public:
  using ModuleList::ModuleList;
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sequential"; }
};

}  // namespace ignis::nn
