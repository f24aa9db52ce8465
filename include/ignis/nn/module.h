// nn::Module: the base of every layer and model. A module owns Tensor members (parameters and
// buffers) and submodule members, and knows them by name so that it can list them, move them
// between devices and dtypes, and save or load them with PyTorch's state-dict keys.
// Layers live in layers.h and containers.h; this file holds only the base and StateDict.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::nn {

/// Name -> tensor in insertion order (like PyTorch's OrderedDict state dicts). Keys are the
/// dotted names of PyTorch ("fc1.weight", "bn1.running_mean", "layer1.0.conv1.weight").
class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;
  StateDict() = default;
  StateDict(std::initializer_list<Item> items);
  /// Adds key (or replaces its tensor, keeping its position).
  void insert(const std::string& key, Tensor value);
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  /// The tensor under key; throws ValueError naming the key when absent.
  const Tensor& at(const std::string& key) const;
  Tensor& at(const std::string& key);
  /// Removes key if present; returns whether it was.
  bool erase(const std::string& key);
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

/// What a non-strict load_state_dict left out (PyTorch's _IncompatibleKeys).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     ///< in the model, not in the checkpoint
  std::vector<std::string> unexpected_keys;  ///< in the checkpoint, not in the model
};

// Note [Module registration by pointer]
// A submodule declared as a member registers itself with its parent in its constructor
// (`Linear fc1{this, "fc1", 10, 512}`), and a module registers its Tensor members by address
// (`register_parameter("weight", &weight)`). This needs no holder type and no second name
// for each member, but the registry stores addresses *into the object*: a copy or move would
// leave the registry pointing into the old object. Modules are therefore neither copyable nor
// movable; put them in containers (Sequential, ModuleList) or std::unique_ptr instead.
// A module destroyed before its parent unregisters itself, so the parent never dangles.

/// Base of layers and models. Subclasses register parameters, buffers and submodules, and
/// override forward. The single-input protocol: `virtual Tensor forward(const Tensor&)` is
/// what operator() and Sequential call; a module with several inputs defines its own forward
/// overload (and calls it directly), leaving the one-input form to throw NotImplementedError.
class Module {
 public:
  /// A root module (no parent).
  Module() = default;
  /// A submodule registered under `name` in `parent` (Note [Module registration by pointer]).
  /// A null parent makes a root. Throws ValueError for an empty, dotted or duplicate name.
  Module(Module* parent, std::string name);
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;

  /// The single-input forward (see the class comment); throws NotImplementedError unless
  /// overridden.
  virtual Tensor forward(const Tensor& x);
  /// Calls forward(x).
  Tensor operator()(const Tensor& x) { return forward(x); }

  // ---- what the module holds -----------------------------------------------------------
  /// Parameters of this module and all submodules (pre-order, registration order; a tensor
  /// registered twice is listed once). Handles share data with the members.
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  /// Direct submodules in registration order.
  std::vector<Module*> children() const;
  std::vector<std::pair<std::string, Module*>> named_children() const;
  /// This module (name "") and every descendant, pre-order, with dotted names.
  std::vector<std::pair<std::string, Module*>> named_modules() const;
  /// Calls fn on every submodule (post-order, as PyTorch's apply) and then on this module.
  void apply(const std::function<void(Module&)>& fn);
  /// Total number of parameter elements (only those requiring grad when only_trainable).
  int64_t num_parameters(bool only_trainable = false) const;
  /// The registered name in the parent ("" for a root).
  const std::string& name() const { return name_; }
  Module* parent() const { return parent_; }

  // ---- modes, devices, dtypes, gradients ---------------------------------------------------
  /// Sets training mode here and in every submodule (Dropout and BatchNorm read it).
  Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  /// Moves every parameter and buffer (and defined gradients) to device, replacing the member
  /// tensors; parameters keep requires_grad. Build optimizers after calling to(), since they
  /// hold the tensors they were given.
  Module& to(Device device);
  /// Converts floating parameters and buffers to dtype (integer buffers such as
  /// num_batches_tracked keep theirs); dtype must be floating (else DTypeError).
  Module& to(DType dtype);
  /// Lays out every 4-D parameter and buffer (conv weights) and their gradients in format,
  /// as PyTorch's module.to(memory_format=...); other tensors are left alone and preserve
  /// changes nothing. The tensors are converted in place (each keeps its identity), so
  /// optimizers built before still update the model's parameters.
  Module& to(MemoryFormat format);
  /// Clears (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  // ---- checkpoints ---------------------------------------------------------------------------
  /// Parameters and persistent buffers under PyTorch's keys, in PyTorch's order (each
  /// module's parameters, then its buffers, then its children). Values share data with the
  /// module (detached); clone them for a snapshot.
  StateDict state_dict() const;
  /// Copies values into the existing tensors (converting dtype, without recording gradients).
  /// Checks everything before copying anything; throws ValueError listing every missing,
  /// unexpected (both only when strict) and mis-shaped key in one message.
  LoadStateDictResult load_state_dict(const StateDict& state, bool strict = true);

  // ---- printing ---------------------------------------------------------------------------
  /// The type name shown in the summary; defaults to the unqualified C++ class name.
  virtual std::string type_name() const;
  /// What goes inside the parentheses of this module's line ("in_features=10, …").
  virtual std::string extra_repr() const { return {}; }
  /// PyTorch's repr: the module tree with each layer's extra_repr.
  std::string repr() const;
  /// repr(), then each parameter's name, shape and size, and the total parameter count.
  std::string str() const;

 protected:
  /// Registers a parameter member by address; a defined floating tensor is set to require
  /// grad. Throws ValueError for a bad or duplicate name.
  void register_parameter(const std::string& name, Tensor* param);
  /// Registers a buffer member (running statistics …); non-persistent buffers are left out
  /// of state_dict.
  void register_buffer(const std::string& name, Tensor* buffer, bool persistent = true);
  /// Adopts a root module as the child `name` (used by containers that own their children).
  void register_module(const std::string& name, Module* child);

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;
    bool persistent = true;
  };
  void check_new_name(const std::string& name, const char* what) const;
  void unregister_child(Module* child);
  void collect_state(const std::string& prefix, StateDict& out) const;
  std::string repr_indented(int indent) const;
  template <class F>
  void for_each_tensor(F&& fn, bool params, bool buffers);

  Module* parent_ = nullptr;
  std::string name_;
  bool training_ = true;
  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
};

/// Writes m.str().
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace ignis::nn
