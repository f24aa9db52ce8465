// Mixed precision: amp::autocast (per-thread op-level casting, like torch.autocast) and
// amp::GradScaler (dynamic loss scaling for float16 training, like torch.cuda.amp.GradScaler).
//
// Under autocast, each op casts its floating-point inputs by the op's list (PyTorch's CUDA
// autocast lists, the same on every Ignis device):
// - low precision (the autocast dtype): matmul, mm, bmm, addmm, baddbmm, linear, conv2d,
//   conv_transpose2d;
// - float32: softmax, log_softmax, cumsum, sum, prod, norm, logsumexp, exp, log, log1p,
//   expm1, rsqrt, pow, softplus, layer_norm, group_norm and every loss;
// - batch_norm and batch_norm_relu are on neither list, as in PyTorch: they run in their
//   input's dtype, so a bf16/float16 convolution output is normalised as it is (statistics
//   in double, output and input gradient in the input's dtype) with float32 weight, bias and
//   running statistics, whose gradients and updates stay float32;
// - everything else runs in the widest dtype of its inputs (type promotion).
// float64 tensors are never cast, and integer tensors are left alone. Casts are recorded by
// autograd, so gradients reach float32 parameters in float32.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "ignis/dtype.h"
#include "ignis/tensor.h"

namespace ignis::optim {
class Optimizer;
}

namespace ignis::amp {

/// Whether autocast is on for this thread, and the low dtype it casts to.
bool is_autocast_enabled();
DType autocast_dtype();

/// Turns autocast on (or, with enabled = false, off) for this thread while alive; nests, and
/// restores the enclosing state on destruction. dtype must be kBFloat16 or kFloat16 (else
/// DTypeError naming the dtype).
class autocast {
 public:
  explicit autocast(DType dtype = kBFloat16, bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  bool prev_enabled_;
  DType prev_dtype_;
};

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

/// Dynamic loss scaling: multiply the loss by `scale` before backward so small float16
/// gradients do not flush to zero, divide the gradients by it before the step, skip steps
/// whose gradients hold inf/NaN and halve the scale then, double it after growth_interval
/// clean steps in a row. Typical use per iteration:
///   scaler.scale(loss).backward(); scaler.step(opt); scaler.update();
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  /// loss * scale (a recorded op, so backward produces scaled gradients); loss as is when
  /// disabled.
  Tensor scale(const Tensor& loss) const;
  /// Divides the optimizer's gradients by the scale in place and records whether any of them
  /// is inf/NaN (one pass per dtype over all gradients). At most once per step: a second
  /// call before update() throws ValueError.
  void unscale_(optim::Optimizer& optimizer);
  /// Unscales (unless unscale_ was called) and runs optimizer.step() only when every gradient
  /// is finite. Returns whether the step ran.
  bool step(optim::Optimizer& optimizer);
  /// Backs off after a step with inf/NaN gradients, grows after growth_interval finite steps
  /// in a row; then forgets this step's per-optimizer state.
  void update();
  /// update() with the scale set to new_scale (must be positive and finite).
  void update(double new_scale);

  double get_scale() const { return enabled_ ? scale_ : 1.0; }
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return enabled_; }

  /// {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} as
  /// PyTorch names them; empty when disabled.
  std::map<std::string, double> state_dict() const;
  /// Restores a state_dict(); missing keys or a non-positive scale throw ValueError.
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  double scale_;
  double growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  int64_t growth_tracker_ = 0;
  bool enabled_;
  // This step: which optimizers were unscaled and whether any of their gradients was not
  // finite (keyed by address, as PyTorch keys per-optimizer state by id()).
  std::map<const optim::Optimizer*, bool> found_inf_;
  std::set<const optim::Optimizer*> stepped_;
};

}  // namespace ignis::amp
