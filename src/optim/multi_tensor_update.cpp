// Groups a step's parameters for the multi-tensor update kernel (see multi_tensor_update.h).
#include "optim/multi_tensor_update.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/graph_capture.h"
#include "core/memory_format.h"
#include "ignis/ops.h"
#include "ops/write_checks.h"

namespace ignis::optim {
using ignis::detail::multi_tensor_update_kernel;
using ignis::detail::MultiTensorItem;
using ignis::detail::MultiTensorUpdateArgs;
using ignis::detail::OptimRule;

double bump_step(ParamState& st) {
  auto it = st.find("step");
  if (it == st.end()) it = st.emplace("step", scalar_tensor(0.0, kFloat32)).first;
  it->second.add_(1);
  return it->second.item<double>();
}

namespace {

bool flag(const GroupOptions& o, const char* key) { return option(o, key) != 0; }

/// The rule's state keys in MultiTensorItem::state order; null where these options use none.
std::array<const char*, 3> state_keys(OptimRule rule, const GroupOptions& o) {
  switch (rule) {
    case OptimRule::sgd:
      return {option(o, "momentum") != 0 ? "momentum_buffer" : nullptr, nullptr, nullptr};
    case OptimRule::adam:
      return {"exp_avg", "exp_avg_sq", flag(o, "amsgrad") ? "max_exp_avg_sq" : nullptr};
    case OptimRule::rmsprop:
      return {
          "square_avg",
          flag(o, "centered") ? "grad_avg" : nullptr,
          option(o, "momentum") > 0 ? "momentum_buffer" : nullptr};
  }
  return {};
}

/// t is float32, on p's device and laid out as p (which is dense): the kernel then runs over
/// both as flat arrays. float32_like(p, p): p itself is float32 and dense.
bool float32_like(const Tensor& t, const Tensor& p) {
  return t.dtype() == kFloat32 && t.device() == p.device() &&
         ignis::detail::same_dense_layout(p, t);
}

/// Whether the kernel takes this parameter: it, its gradient and its existing state are
/// float32 tensors on one device that has the kernel, in one dense layout (contiguous, or
/// channels-last: a convolution weight after Module::to(channels_last) gets its gradient and
/// state in its own layout, Note [Gradient layout follows the leaf]).
bool takes(const ParamUpdate& u, const std::array<const char*, 3>& keys) {
  const Tensor& p = *u.param;
  if (!multi_tensor_update_kernel.has(p.device().type) || !float32_like(p, p) ||
      !float32_like(*u.grad, p))
    return false;
  for (const char* key : keys) {
    if (!key) continue;
    auto it = u.state->find(key);
    if (it != u.state->end() && !float32_like(it->second, p)) return false;
  }
  return true;
}

/// The options that stay fixed over steps, in float32 (rounded once from double, as the op
/// path rounds its scalar arguments).
MultiTensorUpdateArgs constants(OptimRule rule, const GroupOptions& o, bool decoupled) {
  MultiTensorUpdateArgs a;
  a.rule = rule;
  const float sign = flag(o, "maximize") ? -1.0f : 1.0f;
  const double wd = option(o, "weight_decay");
  switch (rule) {
    case OptimRule::sgd: {
      const double momentum = option(o, "momentum");
      a.sgd = {0.0f, float(momentum), float(1 - option(o, "dampening")), float(wd), sign};
      a.sgd_decay = wd != 0;
      a.sgd_momentum = momentum != 0;
      a.sgd_nesterov = flag(o, "nesterov");
      break;
    }
    case OptimRule::adam: {
      const double b1 = option(o, "beta1"), b2 = option(o, "beta2");
      a.adam = {
          float(b1),
          float(1 - b1),
          float(b2),
          float(1 - b2),
          float(option(o, "eps")),
          float(wd),
          sign,
          !decoupled && wd != 0,
          decoupled,
          flag(o, "amsgrad")};
      break;
    }
    case OptimRule::rmsprop: {
      const double alpha = option(o, "alpha"), momentum = option(o, "momentum");
      a.rmsprop = {
          float(alpha),
          float(1 - alpha),
          float(option(o, "eps")),
          float(wd),
          float(momentum),
          sign,
          wd != 0,
          flag(o, "centered"),
          momentum > 0};
      break;
    }
  }
  return a;
}

/// The step's values of one parameter (MultiTensorItem::scalars), appended to `out`.
void append_scalars(
    OptimRule rule,
    const GroupOptions& o,
    bool decoupled,
    ParamState& st,
    std::vector<double>& out) {
  const double lr = option(o, "lr");
  if (rule == OptimRule::sgd) {
    out.push_back(lr);
    out.push_back(option(o, "momentum"));
    return;
  }
  if (rule == OptimRule::rmsprop) {
    out.push_back(lr);
    return;
  }
  const double step = bump_step(st);
  const double b1 = option(o, "beta1"), b2 = option(o, "beta2");
  const double wd = decoupled ? option(o, "weight_decay") : 0;
  out.push_back(1 - lr * wd);
  out.push_back(lr / (1 - std::pow(b1, step)));
  out.push_back(std::sqrt(1 - std::pow(b2, step)));
}

/// The parameters of one device: creates missing state, then one kernel call.
void run_on_device(
    MultiTensorUpdateArgs args,
    const std::vector<const ParamUpdate*>& params,
    const std::array<const char*, 3>& keys,
    const GroupOptions& o,
    bool decoupled,
    Device device,
    const double* captured_values,
    const char* op) {
  std::vector<double> scalars;
  std::vector<size_t> offset;
  scalars.reserve(args.rule == OptimRule::adam ? 3 * params.size() : 2);
  offset.reserve(params.size());
  args.items.reserve(params.size());
  for (const ParamUpdate* u : params) {
    MultiTensorItem item;
    Tensor& p = *u->param;
    ignis::detail::check_writable_layout(p, op);
    item.n = p.numel();
    item.param = p.data_ptr<float>();
    item.grad = u->grad->data_ptr<float>();
    for (int k = 0; k < 3; ++k) {
      if (!keys[k]) continue;
      auto it = u->state->find(keys[k]);
      if (it == u->state->end()) {
        // SGD's buffer starts as the first direction (the kernel writes it whole); the
        // moments of Adam and RMSprop start at zero.
        const bool sgd = args.rule == OptimRule::sgd;
        it = u->state->emplace(keys[k], sgd ? empty_like(p) : zeros_like(p)).first;
        item.first = sgd;
      }
      ignis::detail::check_writable_layout(it->second, op);
      item.state[k] = it->second.data_ptr<float>();
    }
    // SGD and RMSprop share one value per group; Adam's depend on each parameter's count
    // (bumped by append_scalars). RMSprop counts steps per parameter for its state only.
    if (args.rule == OptimRule::rmsprop) bump_step(*u->state);
    if (scalars.empty() || args.rule == OptimRule::adam) {
      offset.push_back(scalars.size());
      append_scalars(args.rule, o, decoupled, *u->state, scalars);
    } else {
      offset.push_back(0);
    }
    args.items.push_back(item);
  }
  // The step's values go where the kernel reads them: on the CPU, here; for a device, a
  // pinned buffer copied without a wait, or during a capture the values the replays refresh
  // (SGD's {lr, momentum}: offset 0 for every parameter).
  Tensor values;
  if (device.type != DeviceType::CPU && !captured_values)
    values = tensor(scalars).pin_memory().to(device, true);
  const double* base = captured_values    ? captured_values
                       : values.defined() ? values.data_ptr<double>()
                                          : scalars.data();
  for (size_t i = 0; i < args.items.size(); ++i) args.items[i].scalars = base + offset[i];
  multi_tensor_update_kernel.get(device)(args);
}

}  // namespace

std::vector<ParamUpdate> multi_tensor_step(
    OptimRule rule, const std::vector<ParamUpdate>& params, const GroupOptions& o, bool decoupled,
    const std::optional<CapturedStepValues>& captured) {
  // During a CUDA graph capture the step values cannot come from pinned host memory (a replay
  // would read it again as it is then): SGD reads the {lr, momentum} the replay hooks keep on
  // the device (Note [Whole-step capture]); Adam and RMSprop take the per-parameter path,
  // which refuses to be captured. A parameter whose state does not exist yet is left to the
  // per-parameter path too: creating it is a first step, which a replay must not repeat.
  const bool capturing = ignis::detail::capture_underway();
  if (capturing && (rule != OptimRule::sgd || !captured)) return params;
  const auto keys = state_keys(rule, o);
  const char* op = rule == OptimRule::sgd ? "SGD" : rule == OptimRule::adam ? "Adam" : "RMSprop";
  std::vector<ParamUpdate> rest;
  // The parameters the kernel takes, per device in order of first appearance (almost always
  // one device: a short list, not a map).
  std::vector<std::pair<Device, std::vector<const ParamUpdate*>>> by_device;
  const auto state_exists = [&](const ParamUpdate& u) {
    for (const char* key : keys)
      if (key && u.state->find(key) == u.state->end()) return false;
    return true;
  };
  for (const ParamUpdate& u : params) {
    if (!takes(u, keys) ||
        (capturing && (u.param->device() != captured->device || !state_exists(u)))) {
      rest.push_back(u);
      continue;
    }
    const Device d = u.param->device();
    auto it = std::find_if(by_device.begin(), by_device.end(),
                           [&](const auto& entry) { return entry.first == d; });
    if (it == by_device.end()) {
      it = by_device.emplace(by_device.end(), d, std::vector<const ParamUpdate*>());
      it->second.reserve(params.size());
    }
    it->second.push_back(&u);
  }
  for (const auto& [device, group] : by_device)
    run_on_device(constants(rule, o, decoupled), group, keys, o, decoupled, device,
                  capturing ? captured->values : nullptr, op);
  return rest;
}

}  // namespace ignis::optim
