// Adam and AdamW (decoupled weight decay), with amsgrad and maximize, as PyTorch 1.13.
#pragma once

#include <utility>

#include "ignis/optim/optimizer.h"

namespace ignis::optim {

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};  ///< group options "beta1", "beta2"
  double eps = 1e-8;
  double weight_decay = 0;  ///< L2 penalty added to the gradient
  bool amsgrad = false;
  bool maximize = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;  ///< decoupled: p *= 1 - lr weight_decay before the step
  bool amsgrad = false;
  bool maximize = false;
};

/// t += 1; g = ±grad (+ weight_decay p for Adam); m = b1 m + (1 - b1) g;
/// v = b2 v + (1 - b2) g^2; v_max = max(v_max, v) with amsgrad;
/// p -= lr / (1 - b1^t) * m / (sqrt(v or v_max) / sqrt(1 - b2^t) + eps).
/// State: "step" (CPU float32 scalar), "exp_avg", "exp_avg_sq", "max_exp_avg_sq".
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  static GroupOptions to_group_options(const AdamOptions& o);

 protected:
  Adam(std::string name, std::vector<Tensor> params, GroupOptions defaults, bool decoupled);
  void update(Tensor& p, const Tensor& grad, ParamState& state,
              const GroupOptions& options) override;
  void update_group(const std::vector<ParamUpdate>& params,
                    const GroupOptions& options) override;
  void validate(const GroupOptions& options) const override;

 private:
  bool decoupled_ = false;
};

/// Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr weight_decay first.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
  static GroupOptions to_group_options(const AdamWOptions& o);
};

}  // namespace ignis::optim
