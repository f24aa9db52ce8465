// optim::Optimizer: the base of SGD, Adam, AdamW, RMSprop and Adagrad. It keeps parameter
// groups (tensors plus their own options), per-parameter state tensors, zero_grad, and state
// dicts laid out as PyTorch's. Subclasses implement one update per parameter.
//
// Group options are named numbers, as in PyTorch's param_groups dicts ("lr", "momentum",
// "weight_decay" …; booleans are 0/1; Adam's betas are "beta1" and "beta2"). That gives LR
// schedulers and state dicts one uniform view of every optimizer, while users construct an
// optimizer from its typed aggregate: `SGD(model.parameters(), {.lr = 0.01, .momentum = 0.9})`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::optim {

/// A group's options by name ("lr" → 0.01). Ordered, so state dicts print stably.
using GroupOptions = std::map<std::string, double>;
/// One parameter's state ("momentum_buffer", "exp_avg", "step" …).
using ParamState = std::map<std::string, Tensor>;

/// Tensors optimised with the same options.
struct ParamGroup {
  std::vector<Tensor> params;
  GroupOptions options;
  /// The option `key`; throws ValueError naming it when absent.
  double get(const std::string& key) const;
  void set(const std::string& key, double value) { options[key] = value; }
};

/// An optimizer's state as PyTorch lays it out: per-parameter state keyed by the parameter's
/// position across all groups, and each group's options with its parameter positions.
struct OptimizerStateDict {
  std::map<int64_t, ParamState> state;
  struct Group {
    GroupOptions options;
    std::vector<int64_t> params;
  };
  std::vector<Group> param_groups;
};

/// One parameter of a step: the tensor, its gradient and its state.
struct ParamUpdate {
  Tensor* param;
  const Tensor* grad;
  ParamState* state;
};

class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  /// One update of every parameter that has a gradient, in place and without recording
  /// gradients (so it runs wherever the parameters live).
  void step();
  /// Clears (set_to_none) or zeroes the gradients of all parameters.
  void zero_grad(bool set_to_none = true);
  /// Adds a group; options missing from `options` take the optimizer's defaults, unknown
  /// names throw ValueError. Parameters already optimised throw ValueError.
  void add_param_group(std::vector<Tensor> params, const GroupOptions& options = {});

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const GroupOptions& defaults() const { return defaults_; }
  /// The state of parameter `index` of group `group` (created empty on first use).
  ParamState& state(size_t group, size_t index);

  /// Snapshot of the state (state tensors are cloned) and of the groups' options.
  OptimizerStateDict state_dict() const;
  /// Restores a snapshot from an optimizer over parameters of the same shapes, grouped the
  /// same way; state tensors are copied to each parameter's device (and floating ones to its
  /// dtype; "step" stays as saved). Throws ValueError naming what does not match.
  void load_state_dict(const OptimizerStateDict& sd);

  /// The name used in error messages ("SGD").
  const std::string& name() const { return name_; }

 protected:
  /// `defaults` lists every option the optimizer understands, with its value. Subclass
  /// constructors then call add_param_group(params) (not done here: validate is virtual).
  Optimizer(std::string name, GroupOptions defaults);
  /// Updates parameter p (which has a gradient) with its state and its group's options.
  virtual void update(Tensor& p, const Tensor& grad, ParamState& state,
                      const GroupOptions& options) = 0;
  /// Updates the parameters of one group that have a gradient. The default calls update()
  /// for each; SGD, Adam and RMSprop first give the ones a multi-tensor kernel takes to it.
  virtual void update_group(const std::vector<ParamUpdate>& params, const GroupOptions& options);
  /// Checks one group's options (ValueError naming the bad one).
  virtual void validate(const GroupOptions& options) const = 0;

 private:
  std::string name_;
  GroupOptions defaults_;
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<ParamState>> state_;  // parallel to groups_[g].params
};

/// Reads option `key` from a group's options (ValueError naming it when absent).
double option(const GroupOptions& options, const std::string& key);

}  // namespace ignis::optim
