// `ignis train --amp off|bf16|fp16`: what mixed precision changes in a training step. The
// forward pass and the loss run under amp::autocast; with fp16 the loss is scaled by a
// GradScaler before backward, and steps whose gradients overflow are skipped while the scale
// backs off. The scaler's state travels in checkpoint.safetensors (TrainState::grad_scaler),
// so --resume continues the same scale schedule. bf16 needs no scaler (float32's exponent
// range).
#pragma once

#include <ignis/ignis.h>

#include <string>

namespace ignis_cli {

class TrainAmp {
 public:
  /// mode: "off", "bf16" or "fp16" (main.cpp has checked it).
  explicit TrainAmp(const std::string& mode);

  bool autocast_enabled() const { return enabled_; }
  ignis::DType dtype() const { return dtype_; }
  /// The loss to call backward() on: scaled under fp16, as is otherwise.
  ignis::Tensor loss_for_backward(const ignis::Tensor& loss) const { return scaler_.scale(loss); }
  /// Whether gradients may legitimately be non-finite (fp16: the scaler skips those steps).
  bool scaler_checks_gradients() const { return scaler_.is_enabled(); }
  /// The optimizer step (through the scaler under fp16, then its update); false when the
  /// scaler skipped it for inf/NaN gradients.
  bool step(ignis::optim::Optimizer& optimizer);
  /// "bf16 autocast" and the like, for the run's header.
  std::string describe() const;

  ignis::amp::GradScaler& scaler() { return scaler_; }

 private:
  bool enabled_;
  ignis::DType dtype_;
  ignis::amp::GradScaler scaler_;
};

}  // namespace ignis_cli
