// The update rules of SGD, Adam/AdamW, RMSprop and Adagrad, re-expressed from PyTorch 1.13's
// single-tensor formulas with in-place ignis ops. Optimizer::step() calls update_group() under
// a NoGradGuard for each group; SGD, Adam and RMSprop give the float32 parameters to the
// multi-tensor kernel (src/optim/multi_tensor_update.h, the same arithmetic fused) and call
// update() for the rest.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "core/error.h"
#include "core/memory_format.h"
#include "core/graph_capture.h"
#include "ops/optim_kernels.h"
#include "ops/write_checks.h"
#include "optim/multi_tensor_update.h"
#include "ignis/ops.h"
#include "ignis/optim/adagrad.h"
#include "ignis/optim/adam.h"
#include "ignis/optim/rmsprop.h"
#include "ignis/optim/sgd.h"

namespace ignis::optim {
namespace {

bool flag(const GroupOptions& o, const char* key) { return option(o, key) != 0; }

// Checks `value >= 0` (or > 0 when strict) with PyTorch's wording.
void check_nonneg(const std::string& opt, const GroupOptions& o, const char* key,
                  const char* what) {
  const double v = option(o, key);
  IGNIS_CHECK(v >= 0, ValueError, "[{}] invalid {}: {}", opt, what, v);
}

void check_lr(const std::string& opt, const GroupOptions& o) {
  const double lr = option(o, "lr");
  IGNIS_CHECK(!std::isnan(lr), ValueError, "[{}] lr is required (set .lr)", opt);
  IGNIS_CHECK(lr >= 0, ValueError, "[{}] invalid learning rate: {}", opt, lr);
}

// bump_step (multi_tensor_update.h) counts steps in a CPU float32 scalar, as PyTorch does.
using ignis::detail::OptimRule;

// The state tensor `key`, created by `make` when absent.
template <class Make>
Tensor& state_or(ParamState& st, const char* key, Make make) {
  auto it = st.find(key);
  if (it == st.end()) it = st.emplace(key, make()).first;
  return it->second;
}

}  // namespace

// ---- SGD --------------------------------------------------------------------------------------
GroupOptions SGD::to_group_options(const SGDOptions& o) {
  return {{"lr", o.lr},           {"momentum", o.momentum},   {"dampening", o.dampening},
          {"weight_decay", o.weight_decay}, {"nesterov", double(o.nesterov)},
          {"maximize", double(o.maximize)}};
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : Optimizer("SGD", to_group_options(options)) {
  add_param_group(std::move(params));
}

void SGD::validate(const GroupOptions& o) const {
  check_lr(name(), o);
  check_nonneg(name(), o, "momentum", "momentum value");
  check_nonneg(name(), o, "weight_decay", "weight_decay value");
  IGNIS_CHECK(!flag(o, "nesterov") || (option(o, "momentum") > 0 && option(o, "dampening") == 0),
              ValueError, "[SGD] Nesterov momentum requires a momentum and zero dampening");
}

/// Note [Whole-step capture]: a captured SGD update reads its group's learning rate and
/// momentum from two float64 on the device, which a replay hook sets from the group's "lr" and
/// "momentum" before every replay (only when one changed: two tiny fills), so schedulers
/// (OneCycle cycles both) reach the replays. The hooks hold a weak reference, so a graph that
/// outlives its optimizer replays with the last values. The multi-tensor kernel reads the same
/// two values for a whole group (multi_tensor_step's CapturedStepValues), the per-parameter
/// kernel for the parameters it leaves.
struct DeviceStepValues {
  struct Entry {
    size_t group;
    Device device;
    Tensor values;  // float64 [lr, momentum]
    double lr = std::numeric_limits<double>::quiet_NaN();
    double momentum = std::numeric_limits<double>::quiet_NaN();
    uint64_t hooked_capture = 0;  // the capture (capture_number) that refreshes it on replay
  };
  Optimizer* owner = nullptr;
  std::vector<Entry> entries;

  static const double* get(std::shared_ptr<DeviceStepValues>& self, Optimizer& opt,
                           const GroupOptions& o, Device device) {
    if (!self) {
      self = std::make_shared<DeviceStepValues>();
      self->owner = &opt;
    }
    size_t group = 0;
    while (&opt.param_groups()[group].options != &o) ++group;  // o is one of them
    size_t k = 0;
    while (k < self->entries.size() &&
           (self->entries[k].group != group || self->entries[k].device != device))
      ++k;
    if (k == self->entries.size())  // empty, not zeros: a fill would be captured too
      self->entries.push_back({group, device, empty({2}, {kFloat64, device})});
    // One replay hook per entry and capture (get runs for every parameter of the group).
    const uint64_t capture = ignis::detail::capture_number();
    Entry& entry = self->entries[k];
    if (entry.hooked_capture == capture) return entry.values.data_ptr<double>();
    entry.hooked_capture = capture;
    std::weak_ptr<DeviceStepValues> weak = self;
    ignis::detail::add_replay_hook([weak, k] {
      if (auto s = weak.lock()) {
        Entry& e = s->entries[k];
        const ParamGroup& g = s->owner->param_groups()[e.group];
        const double lr = g.get("lr"), momentum = g.get("momentum");
        if (lr != e.lr) e.values.narrow(0, 0, 1).fill_(lr);
        if (momentum != e.momentum) e.values.narrow(0, 1, 1).fill_(momentum);
        e.lr = lr;
        e.momentum = momentum;
      }
    });
    return entry.values.data_ptr<double>();
  }
};

namespace {
/// The fused SGD kernel when the device has one and the tensors are plain (float32/float64 of
/// one dtype in one dense layout); false leaves the update to the ops below.
/// values_on_device: where the kernel reads lr and momentum during a CUDA graph capture (null
/// otherwise).
bool sgd_fused(Tensor& p, const Tensor& grad, ParamState& st, const GroupOptions& o,
               const double* values_on_device) {
  using detail::sgd_update_kernel;
  if ((p.dtype() != kFloat32 && p.dtype() != kFloat64) || grad.dtype() != p.dtype() ||
      !detail::same_dense_layout(p, grad) || grad.device() != p.device() ||
      !sgd_update_kernel.has(p.device().type))
    return false;
  detail::SgdUpdateArgs a;
  a.momentum = option(o, "momentum");
  if (a.momentum != 0) {
    auto it = st.find("momentum_buffer");
    if (it == st.end()) {
      // During a capture (values on the device): a graph would replay the first step's
      // "buffer = direction" every time.
      if (values_on_device)
        ignis::detail::refuse_during_capture(
            "SGD", "would create its momentum buffer (a parameter with no gradient in the "
                   "eager warm-up steps)");
      it = st.emplace("momentum_buffer", empty_like(p)).first;
      a.first = true;
    }
    Tensor& buf = it->second;
    if (!detail::same_dense_layout(p, buf) || buf.dtype() != p.dtype()) return false;
    a.momentum_buffer = buf.data_ptr();
    detail::check_writable_layout(buf, "SGD");
  }
  a.dtype = p.dtype();
  a.n = p.numel();
  a.param = p.data_ptr();
  a.grad = grad.data_ptr();
  a.lr = option(o, "lr");
  a.values_on_device = values_on_device;
  a.dampening = option(o, "dampening");
  a.weight_decay = option(o, "weight_decay");
  a.nesterov = flag(o, "nesterov");
  a.maximize = flag(o, "maximize");
  detail::check_writable_layout(p, "SGD");
  sgd_update_kernel.get(p.device())(a);
  return true;
}
}  // namespace

void SGD::update_group(const std::vector<ParamUpdate>& params, const GroupOptions& o) {
  // In a CUDA graph capture the multi-tensor kernel reads the {lr, momentum} that the replay
  // hooks refresh (Note [Whole-step capture]), as the per-parameter kernel does.
  std::optional<CapturedStepValues> captured;
  if (ignis::detail::capture_underway()) {
    const auto cuda = std::find_if(params.begin(), params.end(),
                                   [](const ParamUpdate& u) { return u.param->is_cuda(); });
    if (cuda != params.end()) {
      const Device d = cuda->param->device();
      captured = CapturedStepValues{d, DeviceStepValues::get(device_values_, *this, o, d)};
    }
  }
  Optimizer::update_group(multi_tensor_step(OptimRule::sgd, params, o, false, captured), o);
}

void SGD::update(Tensor& p, const Tensor& grad, ParamState& st, const GroupOptions& o) {
  const double* values_on_device =
      ignis::detail::capture_underway() && p.is_cuda()
          ? DeviceStepValues::get(device_values_, *this, o, p.device())
          : nullptr;
  if (sgd_fused(p, grad, st, o, values_on_device)) return;
  ignis::detail::refuse_during_capture(
      "SGD", "applies its learning rate as a host value on this parameter (no fused kernel)");
  const double momentum = option(o, "momentum"), wd = option(o, "weight_decay");
  Tensor d_p = flag(o, "maximize") ? -grad : grad;
  if (wd != 0) d_p = d_p.add(p, wd);
  if (momentum != 0) {
    auto it = st.find("momentum_buffer");
    if (it == st.end()) {
      it = st.emplace("momentum_buffer", d_p.clone()).first;
    } else {
      it->second.mul_(momentum).add_(d_p, 1 - option(o, "dampening"));
    }
    d_p = flag(o, "nesterov") ? d_p.add(it->second, momentum) : it->second;
  }
  p.add_(d_p, -option(o, "lr"));
}

// ---- Adam / AdamW -----------------------------------------------------------------------------
GroupOptions Adam::to_group_options(const AdamOptions& o) {
  return {{"lr", o.lr},
          {"beta1", o.betas.first},
          {"beta2", o.betas.second},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", double(o.amsgrad)},
          {"maximize", double(o.maximize)}};
}

GroupOptions AdamW::to_group_options(const AdamWOptions& o) {
  return Adam::to_group_options({.lr = o.lr,
                                 .betas = o.betas,
                                 .eps = o.eps,
                                 .weight_decay = o.weight_decay,
                                 .amsgrad = o.amsgrad,
                                 .maximize = o.maximize});
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam("Adam", std::move(params), to_group_options(options), false) {}

Adam::Adam(std::string name, std::vector<Tensor> params, GroupOptions defaults, bool decoupled)
    : Optimizer(std::move(name), std::move(defaults)), decoupled_(decoupled) {
  add_param_group(std::move(params));
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : Adam("AdamW", std::move(params), to_group_options(options), true) {}

void Adam::validate(const GroupOptions& o) const {
  check_lr(name(), o);
  check_nonneg(name(), o, "eps", "epsilon value");
  check_nonneg(name(), o, "weight_decay", "weight_decay value");
  for (const char* b : {"beta1", "beta2"}) {
    const double v = option(o, b);
    IGNIS_CHECK(v >= 0 && v < 1, ValueError, "[{}] invalid {} parameter: {}", name(), b, v);
  }
}

void Adam::update_group(const std::vector<ParamUpdate>& params, const GroupOptions& o) {
  Optimizer::update_group(multi_tensor_step(OptimRule::adam, params, o, decoupled_), o);
}

void Adam::update(Tensor& p, const Tensor& grad, ParamState& st, const GroupOptions& o) {
  ignis::detail::refuse_during_capture(
      name().c_str(), "keeps its step count and bias corrections on the host");
  const double lr = option(o, "lr"), b1 = option(o, "beta1"), b2 = option(o, "beta2");
  const double eps = option(o, "eps"), wd = option(o, "weight_decay");
  const bool amsgrad = flag(o, "amsgrad");
  Tensor g = flag(o, "maximize") ? -grad : grad;
  Tensor& exp_avg = state_or(st, "exp_avg", [&] { return zeros_like(p); });
  Tensor& exp_avg_sq = state_or(st, "exp_avg_sq", [&] { return zeros_like(p); });
  const double step = bump_step(st);

  if (decoupled_) p.mul_(1 - lr * wd);
  else if (wd != 0) g = g.add(p, wd);
  exp_avg.mul_(b1).add_(g, 1 - b1);
  exp_avg_sq.mul_(b2).add_(g * g, 1 - b2);

  const double step_size = lr / (1 - std::pow(b1, step));
  const double bc2_sqrt = std::sqrt(1 - std::pow(b2, step));
  Tensor denom;
  if (amsgrad) {
    Tensor& vmax = state_or(st, "max_exp_avg_sq", [&] { return zeros_like(p); });
    vmax.copy_(maximum(vmax, exp_avg_sq));
    denom = vmax.sqrt().div_(bc2_sqrt).add_(eps);
  } else {
    denom = exp_avg_sq.sqrt().div_(bc2_sqrt).add_(eps);
  }
  p.add_(exp_avg / denom, -step_size);
}

// ---- RMSprop ----------------------------------------------------------------------------------
GroupOptions RMSprop::to_group_options(const RMSpropOptions& o) {
  return {{"lr", o.lr},
          {"alpha", o.alpha},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"momentum", o.momentum},
          {"centered", double(o.centered)},
          {"maximize", double(o.maximize)}};
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options)
    : Optimizer("RMSprop", to_group_options(options)) {
  add_param_group(std::move(params));
}

void RMSprop::validate(const GroupOptions& o) const {
  check_lr(name(), o);
  check_nonneg(name(), o, "eps", "epsilon value");
  check_nonneg(name(), o, "momentum", "momentum value");
  check_nonneg(name(), o, "weight_decay", "weight_decay value");
  check_nonneg(name(), o, "alpha", "alpha value");
}

void RMSprop::update_group(const std::vector<ParamUpdate>& params, const GroupOptions& o) {
  Optimizer::update_group(multi_tensor_step(OptimRule::rmsprop, params, o), o);
}

void RMSprop::update(Tensor& p, const Tensor& grad, ParamState& st, const GroupOptions& o) {
  ignis::detail::refuse_during_capture(
      name().c_str(), "keeps its step count and learning rate on the host");
  const double lr = option(o, "lr"), alpha = option(o, "alpha"), eps = option(o, "eps");
  const double wd = option(o, "weight_decay"), momentum = option(o, "momentum");
  Tensor g = flag(o, "maximize") ? -grad : grad;
  Tensor& square_avg = state_or(st, "square_avg", [&] { return zeros_like(p); });
  bump_step(st);
  if (wd != 0) g = g.add(p, wd);
  square_avg.mul_(alpha).add_(g * g, 1 - alpha);
  Tensor avg;
  if (flag(o, "centered")) {
    Tensor& grad_avg = state_or(st, "grad_avg", [&] { return zeros_like(p); });
    grad_avg.mul_(alpha).add_(g, 1 - alpha);
    avg = (square_avg - grad_avg * grad_avg).sqrt_();
  } else {
    avg = square_avg.sqrt();
  }
  avg.add_(eps);
  if (momentum > 0) {
    Tensor& buf = state_or(st, "momentum_buffer", [&] { return zeros_like(p); });
    buf.mul_(momentum).add_(g / avg);
    p.add_(buf, -lr);
  } else {
    p.add_(g / avg, -lr);
  }
}

// ---- Adagrad ----------------------------------------------------------------------------------
GroupOptions Adagrad::to_group_options(const AdagradOptions& o) {
  return {{"lr", o.lr},
          {"lr_decay", o.lr_decay},
          {"weight_decay", o.weight_decay},
          {"initial_accumulator_value", o.initial_accumulator_value},
          {"eps", o.eps},
          {"maximize", double(o.maximize)}};
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& options)
    : Optimizer("Adagrad", to_group_options(options)) {
  add_param_group(std::move(params));
}

void Adagrad::validate(const GroupOptions& o) const {
  check_lr(name(), o);
  check_nonneg(name(), o, "lr_decay", "lr_decay value");
  check_nonneg(name(), o, "weight_decay", "weight_decay value");
  check_nonneg(name(), o, "initial_accumulator_value", "initial_accumulator_value value");
  check_nonneg(name(), o, "eps", "epsilon value");
}

void Adagrad::update(Tensor& p, const Tensor& grad, ParamState& st, const GroupOptions& o) {
  ignis::detail::refuse_during_capture(
      name().c_str(), "keeps its step count and learning rate on the host");
  const double lr = option(o, "lr"), lr_decay = option(o, "lr_decay");
  const double wd = option(o, "weight_decay"), eps = option(o, "eps");
  Tensor& sum = state_or(
      st, "sum", [&] { return full_like(p, option(o, "initial_accumulator_value")); });
  const double step = bump_step(st);
  Tensor g = flag(o, "maximize") ? -grad : grad;
  if (wd != 0) g = g.add(p, wd);
  const double clr = lr / (1 + (step - 1) * lr_decay);
  sum.add_(g * g);
  Tensor denom = sum.sqrt().add_(eps);
  p.add_(g / denom, -clr);
}

}  // namespace ignis::optim
