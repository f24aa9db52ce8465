// RMSprop (plain or centered, with momentum) as PyTorch 1.13.
#pragma once

#include "ignis/optim/optimizer.h"

namespace ignis::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
};

/// g = ±grad + weight_decay p; v = alpha v + (1 - alpha) g^2; centered: a = alpha a +
/// (1 - alpha) g and avg = sqrt(v - a^2), else avg = sqrt(v); avg += eps; with momentum
/// b = momentum b + g / avg and p -= lr b, else p -= lr g / avg.
/// State: "step", "square_avg", "momentum_buffer", "grad_avg".
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = {});
  static GroupOptions to_group_options(const RMSpropOptions& o);

 protected:
  void update(Tensor& p, const Tensor& grad, ParamState& state,
              const GroupOptions& options) override;
  void update_group(const std::vector<ParamUpdate>& params,
                    const GroupOptions& options) override;
  void validate(const GroupOptions& options) const override;
};

}  // namespace ignis::optim
