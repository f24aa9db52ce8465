// optim::Optimizer: parameter groups, per-parameter state, zero_grad and state dicts.
#include "ignis/optim/optimizer.h"

#include <fmt/format.h>

#include <unordered_set>

#include "core/error.h"
#include "core/shape.h"
#include "ignis/autograd.h"

namespace ignis::optim {
using detail::shape_str;

double option(const GroupOptions& options, const std::string& key) {
  auto it = options.find(key);
  IGNIS_CHECK(it != options.end(), ValueError, "[optimizer] group has no option '{}'", key);
  return it->second;
}

double ParamGroup::get(const std::string& key) const { return option(options, key); }

Optimizer::Optimizer(std::string name, GroupOptions defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {}

void Optimizer::add_param_group(std::vector<Tensor> params, const GroupOptions& options) {
  IGNIS_CHECK(!params.empty(), ValueError, "[{}] optimizer got an empty parameter list", name_);
  std::unordered_set<const void*> seen;
  for (const auto& g : groups_)
    for (const auto& p : g.params) seen.insert(p.impl());
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    IGNIS_CHECK(p.defined(), ValueError, "[{}] parameter {} is undefined", name_, i);
    IGNIS_CHECK(is_floating(p.dtype()), DTypeError,
                "[{}] can only optimize floating tensors, parameter {} is {}", name_, i,
                dtype_name(p.dtype()));
    IGNIS_CHECK(p.is_leaf(), ValueError, "[{}] can't optimize a non-leaf tensor (parameter {})",
                name_, i);
    IGNIS_CHECK(seen.insert(p.impl()).second, ValueError,
                "[{}] some parameters appear in more than one parameter group (parameter {})",
                name_, i);
  }
  GroupOptions merged = defaults_;
  for (const auto& [k, v] : options) {
    IGNIS_CHECK(defaults_.count(k) || k == "initial_lr", ValueError,
                "[{}] unknown option '{}' in add_param_group", name_, k);
    merged[k] = v;
  }
  validate(merged);
  groups_.push_back({std::move(params), std::move(merged)});
  state_.emplace_back(groups_.back().params.size());
}

ParamState& Optimizer::state(size_t group, size_t index) {
  IGNIS_CHECK(group < state_.size() && index < state_[group].size(), IndexError,
              "[{}] no parameter {} in group {}", name_, index, group);
  return state_[group][index];
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (size_t g = 0; g < groups_.size(); ++g) {
    validate(groups_[g].options);  // schedulers or users may have changed them
    std::vector<ParamUpdate> with_grad;
    with_grad.reserve(groups_[g].params.size());
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      Tensor& p = groups_[g].params[i];
      const Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      IGNIS_CHECK(grad.sizes() == p.sizes(), ShapeError,
                  "[{}] gradient {} does not match parameter {} (group {}, index {})", name_,
                  shape_str(grad.sizes()), shape_str(p.sizes()), g, i);
      with_grad.push_back({&p, &grad, &state_[g][i]});
    }
    update_group(with_grad, groups_[g].options);
  }
}

void Optimizer::update_group(const std::vector<ParamUpdate>& params, const GroupOptions& o) {
  for (const ParamUpdate& u : params) update(*u.param, *u.grad, *u.state, o);
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& g : groups_)
    for (auto& p : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) p.mutable_grad() = Tensor();
      else p.mutable_grad().zero_();
    }
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict sd;
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    OptimizerStateDict::Group group{groups_[g].options, {}};
    for (size_t i = 0; i < groups_[g].params.size(); ++i, ++index) {
      group.params.push_back(index);
      if (state_[g][i].empty()) continue;
      ParamState copy;
      for (const auto& [k, t] : state_[g][i]) copy[k] = t.clone();
      sd.state[index] = std::move(copy);
    }
    sd.param_groups.push_back(std::move(group));
  }
  return sd;
}

void Optimizer::load_state_dict(const OptimizerStateDict& sd) {
  IGNIS_CHECK(sd.param_groups.size() == groups_.size(), ValueError,
              "[{}] loaded state dict has {} parameter groups, the optimizer has {}", name_,
              sd.param_groups.size(), groups_.size());
  // Positions of the saved groups map onto ours in order; check sizes before changing anything.
  std::map<int64_t, std::pair<size_t, size_t>> where;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const auto& saved = sd.param_groups[g].params;
    IGNIS_CHECK(saved.size() == groups_[g].params.size(), ValueError,
                "[{}] loaded group {} has {} parameters, the optimizer's has {}", name_, g,
                saved.size(), groups_[g].params.size());
    for (size_t i = 0; i < saved.size(); ++i) where[saved[i]] = {g, i};
  }
  for (const auto& [index, st] : sd.state) {
    auto it = where.find(index);
    IGNIS_CHECK(it != where.end(), ValueError,
                "[{}] loaded state for parameter {} that no group lists", name_, index);
    const Tensor& p = groups_[it->second.first].params[it->second.second];
    for (const auto& [k, t] : st)
      IGNIS_CHECK(k == "step" || t.sizes() == p.sizes(), ValueError,
                  "[{}] loaded state '{}' of parameter {} has shape {}, the parameter {}",
                  name_, k, index, shape_str(t.sizes()), shape_str(p.sizes()));
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const auto& [k, v] : sd.param_groups[g].options) groups_[g].options[k] = v;
    for (auto& s : state_[g]) s.clear();
  }
  for (const auto& [index, st] : sd.state) {
    auto [g, i] = where.at(index);
    const Tensor& p = groups_[g].params[i];
    ParamState& dst = state_[g][i];
    for (const auto& [k, t] : st) {
      // "step" stays a CPU scalar (as PyTorch keeps it); the rest follows the parameter.
      if (k == "step") dst[k] = t.clone();
      else if (is_floating(t.dtype())) dst[k] = t.to(p.device(), p.dtype(), false, true);
      else dst[k] = t.to(p.device(), false, true);
    }
  }
}

}  // namespace ignis::optim
