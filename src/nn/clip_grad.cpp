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
  const double total_value = total.item<double>();
  IGNIS_CHECK(!error_if_nonfinite || std::isfinite(total_value), ValueError,
              "[clip_grad_norm_] the total norm of order {} of the gradients is non-finite, so "
              "it cannot be clipped",
              norm_type);
  const double coef = max_norm / (total_value + 1e-6);
  if (coef < 1)
    for (auto& p : parameters) {
      Tensor g = p.grad();
      if (g.defined()) g.mul_(coef);
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
