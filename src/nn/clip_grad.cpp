// clip_grad_norm_ and clip_grad_value_ over the gradients of a parameter list.
#include "ignis/nn/clip_grad.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"

namespace ignis::nn::utils {

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  IGNIS_CHECK(norm_type > 0, ValueError, "[clip_grad_norm_] norm_type must be > 0, got {}",
              norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return scalar_tensor(0.0, kFloat32);
  // Per-gradient norms, then the norm of those norms, on the first gradient's device.
  const bool inf = std::isinf(norm_type);
  std::vector<Tensor> norms;
  for (const auto& g : grads) {
    Tensor n;
    if (inf) n = g.numel() ? amax(g.abs()) : zeros({}, g.dtype());
    else if (norm_type == 1 || norm_type == 2) n = norm(g, norm_type);
    else n = pow(pow(g.abs(), norm_type).sum(), 1 / norm_type);
    norms.push_back(n.to(grads[0].device()).to(kFloat64));
  }
  Tensor all = stack(norms);
  Tensor total = inf ? amax(all) : (norm_type == 1 || norm_type == 2
                                        ? norm(all, norm_type)
                                        : pow(pow(all, norm_type).sum(), 1 / norm_type));
  // The host reads the total only to raise: the scaling stays on the device, so a training
  // step that clips waits for nothing (as PyTorch's: gradients times min(1, coef)).
  if (error_if_nonfinite)
    IGNIS_CHECK(std::isfinite(total.item<double>()), ValueError,
                "[clip_grad_norm_] the total norm of order {} of the gradients is non-finite, "
                "so it cannot be clipped",
                norm_type);
  const Tensor coef = clamp_max(max_norm / (total + 1e-6), 1.0);
  // Converted once for the gradients' usual device and dtype (the first's), not per tensor.
  const Tensor common = coef.to(grads[0].dtype());  // already on the first one's device
  for (Tensor& g : grads) {  // handles of the parameters' .grad(): scaled in place
    const bool same = g.device() == common.device() && g.dtype() == common.dtype();
    g.mul_(same ? common : coef.to(g.device()).to(g.dtype()));
  }
  return total.to(grads[0].dtype());
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const auto& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace ignis::nn::utils
