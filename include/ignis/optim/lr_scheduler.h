// Learning-rate schedulers. Each sets the "lr" of every parameter group of an optimizer at
// construction (epoch 0) and on each step() (PyTorch's protocol: call optimizer.step(), then
// scheduler.step()). Schedulers hold a reference to the optimizer, which must outlive them.
//
// Note [Closed-form schedules]
// PyTorch computes most schedules recursively from the group's current lr (so that several
// schedulers can be chained); ignis evaluates the closed form from the base lr ("initial_lr"
// of the group) and the epoch. For one scheduler per optimizer (or SequentialLR) both give the
// same sequence — the tests check the closed forms against step-by-step recursions — and the
// closed form does not accumulate rounding. Two schedulers stepping the same optimizer at the
// same time (ChainedScheduler) and lrs changed by hand between steps are therefore not
// composed as PyTorch would.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "ignis/optim/optimizer.h"

namespace ignis::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  /// Advances one epoch (or iteration) and sets each group's lr.
  void step();
  /// The lrs set by the last step (or by the constructor), one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /// The lr of group `group` at `epoch` (Note [Closed-form schedules]).
  virtual double lr_at(int64_t epoch, size_t group) const = 0;

 protected:
  /// Records each group's "initial_lr" (set from "lr" when absent) as its base lr.
  explicit LRScheduler(Optimizer& optimizer);
  /// Sets the lrs for epoch 0; derived constructors end with it (lr_at is virtual).
  void initial_step() { apply_epoch(0); }
  void apply_epoch(int64_t epoch);
  /// Called after the lrs of an epoch are set (OneCycleLR sets momentum here).
  virtual void on_epoch(int64_t epoch) {}

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;

 private:
  int64_t last_epoch_ = -1;
  std::vector<double> last_lr_;
};

/// base_lr * gamma^floor(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch, size_t group) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// base_lr * gamma^(number of milestones <= epoch).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(int64_t epoch, size_t group) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

/// base_lr * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  double lr_at(int64_t epoch, size_t group) const override;

 private:
  double gamma_;
};

/// eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2 (periodic past T_max, as
/// PyTorch's recursion is).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
  double lr_at(int64_t epoch, size_t group) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

/// base_lr * (start + (end - start) min(epoch, total_iters) / total_iters): a linear warm-up.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);
  double lr_at(int64_t epoch, size_t group) const override;

 private:
  double start_, end_;
  int64_t total_;
};

/// base_lr * factor(epoch), with any factor function (PyTorch's LambdaLR with one lambda for
/// every group).
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> factor);
  double lr_at(int64_t epoch, size_t group) const override;

 private:
  std::function<double(int64_t)> factor_;
};

/// Runs schedulers[i] from epoch milestones[i-1] on, each restarting at its epoch 0. The
/// schedulers must be built on the same optimizer and outlive this one.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::reference_wrapper<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  double lr_at(int64_t epoch, size_t group) const override;

 private:
  std::vector<std::reference_wrapper<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

struct OneCycleLROptions {
  double pct_start = 0.3;  ///< fraction of the steps spent increasing the lr
  enum class Anneal { Cos, Linear } anneal_strategy = Anneal::Cos;
  bool cycle_momentum = true;  ///< cycles "momentum" (SGD, RMSprop) or "beta1" (Adam)
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25;           ///< initial_lr = max_lr / div_factor
  double final_div_factor = 1e4;    ///< min_lr = initial_lr / final_div_factor
  bool three_phase = false;         ///< warm up, come back to initial_lr, then anneal to min_lr
};

/// The 1cycle policy over total_steps steps (one step() per batch). Stepping past
/// total_steps throws ValueError.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
             const OneCycleLROptions& options = {});
  double lr_at(int64_t epoch, size_t group) const override;
  /// The momentum (or beta1) of `epoch`.
  double momentum_at(int64_t epoch) const;

 protected:
  void on_epoch(int64_t epoch) override;

 private:
  struct Phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
  };
  // Which phase `epoch` falls in and how far through it (0..1), as PyTorch walks them.
  std::pair<const Phase*, double> locate(int64_t epoch) const;
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_;
  OneCycleLROptions o_;
  double initial_lr_, max_lr_, min_lr_;
  std::vector<Phase> phases_;
  const char* momentum_key_ = nullptr;  // "momentum", "beta1" or null
};

struct ReduceLROnPlateauOptions {
  enum class Mode { Min, Max } mode = Mode::Min;
  double factor = 0.1;  ///< new_lr = lr * factor (must be < 1)
  int64_t patience = 10;  ///< epochs without improvement tolerated
  double threshold = 1e-4;
  enum class ThresholdMode { Rel, Abs } threshold_mode = ThresholdMode::Rel;
  int64_t cooldown = 0;  ///< epochs to wait after a reduction before counting again
  double min_lr = 0;
  double eps = 1e-8;  ///< reductions smaller than this are skipped
};

/// Multiplies the lrs by factor when a metric has stopped improving for patience epochs.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});
  /// Records this epoch's metric and reduces the lrs if needed.
  void step(double metric);
  std::vector<double> get_last_lr() const;
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }

 private:
  bool is_better(double a) const;
  Optimizer& optimizer_;
  ReduceLROnPlateauOptions o_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};

}  // namespace ignis::optim
