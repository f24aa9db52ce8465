// Adagrad with learning-rate decay as PyTorch 1.13.
#pragma once

#include "ignis/optim/optimizer.h"

namespace ignis::optim {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
};

/// t += 1; g = ±grad + weight_decay p; s += g^2 (s starts at initial_accumulator_value);
/// p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps). State: "step", "sum".
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& options = {});
  static GroupOptions to_group_options(const AdagradOptions& o);

 protected:
  void update(Tensor& p, const Tensor& grad, ParamState& state,
              const GroupOptions& options) override;
  void validate(const GroupOptions& options) const override;
};

}  // namespace ignis::optim
