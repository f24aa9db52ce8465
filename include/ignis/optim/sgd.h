// Stochastic gradient descent with momentum, dampening, Nesterov momentum, weight decay and
// maximize, with PyTorch 1.13's update rule (see SGD's comment).
#pragma once

#include <limits>
#include <memory>

#include "ignis/optim/optimizer.h"

namespace ignis::optim {
struct DeviceStepValues;  // src/optim/optimizers.cpp

struct SGDOptions {
  double lr = std::numeric_limits<double>::quiet_NaN();  ///< required (no default, as PyTorch)
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;  ///< needs momentum > 0 and dampening = 0
  bool maximize = false;
};

/// g = ±grad + weight_decay p; with momentum, buf = g on the first step, else
/// buf = momentum buf + (1 - dampening) g, and g = g + momentum buf (Nesterov) or buf;
/// then p -= lr g. State: "momentum_buffer". Group options use the field names.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  static GroupOptions to_group_options(const SGDOptions& o);

 protected:
  void update(Tensor& p, const Tensor& grad, ParamState& state,
              const GroupOptions& options) override;
  void update_group(const std::vector<ParamUpdate>& params,
                    const GroupOptions& options) override;
  void validate(const GroupOptions& options) const override;

 private:
  // The learning rates that updates captured into a CUDA graph read on the device.
  std::shared_ptr<DeviceStepValues> device_values_;
};

}  // namespace ignis::optim
