// TrainAmp (see train_amp.h).
#include "train_amp.h"

#include <fmt/format.h>

namespace ig = ignis;

namespace ignis_cli {

TrainAmp::TrainAmp(const std::string& mode)
    : enabled_(mode != "off"),
      dtype_(mode == "fp16" ? ig::kFloat16 : ig::kBFloat16),
      scaler_({.enabled = mode == "fp16"}) {}

bool TrainAmp::step(ig::optim::Optimizer& optimizer) {
  if (!scaler_.is_enabled()) {
    optimizer.step();
    return true;
  }
  const bool stepped = scaler_.step(optimizer);
  scaler_.update();
  return stepped;
}

std::string TrainAmp::describe() const {
  if (!enabled_) return "off (float32)";
  if (!scaler_.is_enabled()) return "bf16 autocast (float32 weights)";
  return fmt::format(
      "fp16 autocast (float32 weights), GradScaler at scale {:g}", scaler_.get_scale());
}

}  // namespace ignis_cli
