// amp::GradScaler: dynamic loss scaling with PyTorch's schedule (torch.cuda.amp.GradScaler).
// The unscale of all gradients is one kernel call per (device, dtype) over the whole list
// (unscale_kernel, src/ops/optim_kernels.h), which also reports whether any gradient was
// inf/NaN; a device without that kernel gets the same arithmetic from ops.
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/memory_format.h"
#include "ignis/amp.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"
#include "ignis/optim/optimizer.h"
#include "ops/optim_kernels.h"

namespace ignis::amp {

namespace {

void check_positive_finite(double v, const char* what) {
  IGNIS_CHECK(
      v > 0 && std::isfinite(v),
      ValueError,
      "[GradScaler] {} must be positive and finite, got {}",
      what,
      v);
}

/// The gradients of one (device, dtype): the kernel's arguments and the tensors themselves.
struct GradGroup {
  detail::UnscaleArgs args;
  std::vector<Tensor> grads;
};

/// Unscales gradients a fused kernel does not take (non-contiguous ones, or a device without
/// the kernel): the same arithmetic with ops, the flags combined on the device and read once.
bool unscale_with_ops(const std::vector<Tensor>& grads, float inv_scale) {
  Tensor ok = full({}, true, {kBool, grads.front().device()});
  for (Tensor g : grads) {
    ok = logical_and(ok, all(isfinite(g)));
    g.mul_(double(inv_scale));
  }
  return !ok.item<bool>();
}

/// Unscales every defined gradient of the optimizer; returns whether any was inf/NaN.
bool unscale_grads(optim::Optimizer& optimizer, float inv_scale) {
  // Gradients grouped by device and dtype: one kernel call per group.
  std::map<std::tuple<DeviceType, int, DType>, GradGroup> groups;
  bool found = false;
  NoGradGuard no_grad;
  for (optim::ParamGroup& group : optimizer.param_groups()) {
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      Tensor& g = p.mutable_grad();
      IGNIS_CHECK(
          is_floating(g.dtype()),
          DTypeError,
          "[GradScaler] expected floating-point gradients, got {}",
          dtype_name(g.dtype()));
      // The kernel scales numel elements from data_ptr(): any dense layout (channels-last
      // gradients of convolutions too) is one such run. Others (a gradient assigned by hand
      // as a strided view) take the plain ops.
      if (!ignis::detail::is_non_overlapping_and_dense(g.sizes(), g.strides())) {
        found |= unscale_with_ops({g}, inv_scale);
        continue;
      }
      GradGroup& gg = groups[{g.device().type, g.device().index, g.dtype()}];
      gg.args.dtype = g.dtype();
      gg.args.inv_scale = inv_scale;
      gg.args.data.push_back(g.data_ptr());
      gg.args.numel.push_back(g.numel());
      gg.grads.push_back(g);
    }
  }
  for (const auto& [key, gg] : groups) {
    const Device device(std::get<0>(key), std::get<1>(key));
    found |= detail::unscale_kernel.has(device.type) ? detail::unscale_kernel.get(device)(gg.args)
                                                     : unscale_with_ops(gg.grads, inv_scale);
  }
  return found;
}

/// The growth options' rules, for the constructor and for a loaded state dict (`prefix` says
/// which, e.g. "the saved " before growth_interval).
void check_growth_options(double growth_factor, double backoff_factor, double growth_interval,
                          const char* prefix) {
  IGNIS_CHECK(growth_factor > 1, ValueError, "[GradScaler] {}growth_factor must be > 1, got {}",
              prefix, growth_factor);
  IGNIS_CHECK(backoff_factor > 0 && backoff_factor < 1, ValueError,
              "[GradScaler] {}backoff_factor must be in (0, 1), got {}", prefix, backoff_factor);
  IGNIS_CHECK(growth_interval > 0 && growth_interval == std::floor(growth_interval), ValueError,
              "[GradScaler] {}growth_interval must be a positive integer, got {}", prefix,
              growth_interval);
}
}  // namespace

GradScaler::GradScaler(GradScalerOptions o)
    : scale_(o.init_scale),
      growth_factor_(o.growth_factor),
      backoff_factor_(o.backoff_factor),
      growth_interval_(o.growth_interval),
      enabled_(o.enabled) {
  check_positive_finite(o.init_scale, "init_scale");
  check_growth_options(o.growth_factor, o.backoff_factor, double(o.growth_interval), "");
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!enabled_) return loss;
  IGNIS_CHECK(
      loss.defined() && is_floating(loss.dtype()),
      DTypeError,
      "[GradScaler] scale() expects a floating-point loss");
  // A float32 0-dim factor, as PyTorch's float32 scale tensor: a float16 loss is promoted
  // rather than overflowing at 65536 * loss.
  return mul(loss, full({}, scale_, {kFloat32, loss.device()}));
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  IGNIS_CHECK(
      !found_inf_.count(&optimizer),
      ValueError,
      "[GradScaler] unscale_() has already been called on this optimizer since the last "
      "update()");
  // 1/scale rounded to float32, as PyTorch computes it (exact for powers of two).
  found_inf_[&optimizer] = unscale_grads(optimizer, float(1.0 / scale_));
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  IGNIS_CHECK(
      !stepped_.count(&optimizer),
      ValueError,
      "[GradScaler] step() has already been called since the last update()");
  if (!found_inf_.count(&optimizer)) unscale_(optimizer);
  stepped_.insert(&optimizer);
  if (found_inf_[&optimizer]) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  IGNIS_CHECK(
      !found_inf_.empty(),
      ValueError,
      "[GradScaler] update() without unscale_() or step() since the last update(): no "
      "inf checks were recorded");
  bool found = false;
  for (const auto& [opt, inf] : found_inf_) found |= inf;
  // PyTorch's _amp_update_scale_: back off on inf/NaN, grow after growth_interval clean
  // steps in a row (unless the grown scale would overflow float32).
  if (found) {
    scale_ *= backoff_factor_;
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 == growth_interval_) {
    const double grown = scale_ * growth_factor_;
    if (std::isfinite(float(grown))) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  found_inf_.clear();
  stepped_.clear();
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  check_positive_finite(new_scale, "new_scale");
  scale_ = new_scale;
  found_inf_.clear();
  stepped_.clear();
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!enabled_) return {};
  return {
      {"scale", scale_},
      {"growth_factor", growth_factor_},
      {"backoff_factor", backoff_factor_},
      {"growth_interval", double(growth_interval_)},
      {"_growth_tracker", double(growth_tracker_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!enabled_) return;
  auto get = [&](const char* key) {
    auto it = state.find(key);
    IGNIS_CHECK(it != state.end(), ValueError, "[GradScaler] state dict has no \"{}\"", key);
    return it->second;
  };
  const double scale = get("scale"), tracker = get("_growth_tracker");
  check_positive_finite(scale, "the saved scale");
  IGNIS_CHECK(
      tracker >= 0 && tracker == std::floor(tracker),
      ValueError,
      "[GradScaler] the saved _growth_tracker must be a non-negative integer, got {}",
      tracker);
  const double growth = get("growth_factor"), backoff = get("backoff_factor"),
               interval = get("growth_interval");
  check_growth_options(growth, backoff, interval, "the saved ");
  scale_ = scale;
  growth_factor_ = growth;
  backoff_factor_ = backoff;
  growth_interval_ = int64_t(interval);
  growth_tracker_ = int64_t(tracker);
  // A step's unscale/step bookkeeping belongs to the run that saved the state, not this one.
  found_inf_.clear();
  stepped_.clear();
}

}  // namespace ignis::amp
