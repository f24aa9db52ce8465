// The learning-rate schedulers of lr_scheduler.h, as closed forms of (base lr, epoch)
// (Note [Closed-form schedules]); ReduceLROnPlateau follows PyTorch's state machine.
#include "ignis/optim/lr_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace ignis::optim {

// ---- base ---------------------------------------------------------------------------------------
LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (auto& g : optimizer_.param_groups()) {
    if (!g.options.count("initial_lr")) g.set("initial_lr", g.get("lr"));
    base_lrs_.push_back(g.get("initial_lr"));
  }
}

void LRScheduler::step() { apply_epoch(last_epoch_ + 1); }

void LRScheduler::apply_epoch(int64_t epoch) {
  std::vector<double> lrs;
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g) lrs.push_back(lr_at(epoch, g));
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.param_groups()[g].set("lr", lrs[g]);
  last_epoch_ = epoch;
  last_lr_ = std::move(lrs);
  on_epoch(epoch);
}

// ---- StepLR, MultiStepLR, ExponentialLR -------------------------------------------------------
StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  IGNIS_CHECK(step_size > 0, ValueError, "[StepLR] step_size must be positive, got {}",
              step_size);
  initial_step();
}

double StepLR::lr_at(int64_t epoch, size_t g) const {
  return base_lrs_[g] * std::pow(gamma_, double(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

double MultiStepLR::lr_at(int64_t epoch, size_t g) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) -
                      milestones_.begin();
  return base_lrs_[g] * std::pow(gamma_, double(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}

double ExponentialLR::lr_at(int64_t epoch, size_t g) const {
  return base_lrs_[g] * std::pow(gamma_, double(epoch));
}

// ---- CosineAnnealingLR, LinearLR ----------------------------------------------------------------
CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  IGNIS_CHECK(T_max > 0, ValueError, "[CosineAnnealingLR] T_max must be positive, got {}", T_max);
  initial_step();
}

double CosineAnnealingLR::lr_at(int64_t epoch, size_t g) const {
  return eta_min_ +
         (base_lrs_[g] - eta_min_) * (1 + std::cos(M_PI * double(epoch) / double(t_max_))) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer), start_(start_factor), end_(end_factor), total_(total_iters) {
  IGNIS_CHECK(start_factor > 0 && start_factor <= 1, ValueError,
              "[LinearLR] start_factor must be in (0, 1], got {}", start_factor);
  IGNIS_CHECK(end_factor >= 0 && end_factor <= 1, ValueError,
              "[LinearLR] end_factor must be in [0, 1], got {}", end_factor);
  IGNIS_CHECK(total_iters > 0, ValueError, "[LinearLR] total_iters must be positive, got {}",
              total_iters);
  initial_step();
}

double LinearLR::lr_at(int64_t epoch, size_t g) const {
  const double t = double(std::min(epoch, total_));
  return base_lrs_[g] * (start_ + (end_ - start_) * t / double(total_));
}

// ---- LambdaLR -----------------------------------------------------------------------------------
LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> factor)
    : LRScheduler(optimizer), factor_(std::move(factor)) {
  IGNIS_CHECK(bool(factor_), ValueError, "[LambdaLR] expects a factor function");
  initial_step();
}

double LambdaLR::lr_at(int64_t epoch, size_t g) const { return base_lrs_[g] * factor_(epoch); }

// ---- SequentialLR -------------------------------------------------------------------------------
SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::reference_wrapper<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  IGNIS_CHECK(!schedulers_.empty(), ValueError, "[SequentialLR] expects at least one scheduler");
  IGNIS_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError,
              "[SequentialLR] expects {} milestones for {} schedulers, got {}",
              schedulers_.size() - 1, schedulers_.size(), milestones_.size());
  IGNIS_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError,
              "[SequentialLR] milestones must be increasing");
  initial_step();
}

double SequentialLR::lr_at(int64_t epoch, size_t g) const {
  // PyTorch restarts scheduler i at its epoch 0 when epoch reaches milestones[i-1].
  const size_t i = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) -
                          milestones_.begin());
  const int64_t local = i == 0 ? epoch : epoch - milestones_[i - 1];
  return schedulers_[i].get().lr_at(local, g);
}

// ---- OneCycleLR ---------------------------------------------------------------------------------
OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
                       const OneCycleLROptions& o)
    : LRScheduler(optimizer), total_steps_(total_steps), o_(o) {
  IGNIS_CHECK(total_steps > 0, ValueError, "[OneCycleLR] total_steps must be positive, got {}",
              total_steps);
  IGNIS_CHECK(o.pct_start >= 0 && o.pct_start <= 1, ValueError,
              "[OneCycleLR] pct_start must be in [0, 1], got {}", o.pct_start);
  initial_lr_ = max_lr / o.div_factor;
  max_lr_ = max_lr;
  min_lr_ = initial_lr_ / o.final_div_factor;
  const double t = double(total_steps), p = o.pct_start;
  if (o.three_phase) {
    phases_ = {{p * t - 1, initial_lr_, max_lr_, o.max_momentum, o.base_momentum},
               {2 * p * t - 2, max_lr_, initial_lr_, o.base_momentum, o.max_momentum},
               {t - 1, initial_lr_, min_lr_, o.max_momentum, o.max_momentum}};
  } else {
    phases_ = {{p * t - 1, initial_lr_, max_lr_, o.max_momentum, o.base_momentum},
               {t - 1, max_lr_, min_lr_, o.base_momentum, o.max_momentum}};
  }
  // The schedule starts from max_lr / div_factor whatever the optimizer's lr was.
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g) {
    auto& group = optimizer_.param_groups()[g];
    group.set("initial_lr", initial_lr_);
    group.set("max_lr", max_lr_);
    group.set("min_lr", min_lr_);
    base_lrs_[g] = initial_lr_;
  }
  if (o.cycle_momentum) {
    const auto& d = optimizer_.defaults();
    momentum_key_ = d.count("beta1") ? "beta1" : d.count("momentum") ? "momentum" : nullptr;
    IGNIS_CHECK(momentum_key_ != nullptr, ValueError,
                "[OneCycleLR] optimizer {} has no momentum or beta1 to cycle; set "
                ".cycle_momentum = false",
                optimizer_.name());
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (o_.anneal_strategy == OneCycleLROptions::Anneal::Cos)
    return end + (start - end) / 2 * (std::cos(M_PI * pct) + 1);
  return (end - start) * pct + start;
}

std::pair<const OneCycleLR::Phase*, double> OneCycleLR::locate(int64_t epoch) const {
  IGNIS_CHECK(epoch <= total_steps_, ValueError,
              "[OneCycleLR] tried to step {} times; the specified number of total steps is {}",
              epoch, total_steps_);
  double start = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (double(epoch) <= ph.end_step || i + 1 == phases_.size()) {
      // An empty phase would give 0/0 or 1/0: NaN or infinite rates (PyTorch raises too).
      IGNIS_CHECK(
          ph.end_step != start,
          ValueError,
          "[OneCycleLR] step {} falls in phase {}, which is empty with pct_start {} and "
          "total_steps {}",
          epoch,
          i + 1,
          o_.pct_start,
          total_steps_);
      return {&ph, (double(epoch) - start) / (ph.end_step - start)};
    }
    start = ph.end_step;
  }
  return {&phases_.back(), 1.0};  // not reached: the last phase always matches
}

double OneCycleLR::lr_at(int64_t epoch, size_t) const {
  auto [ph, pct] = locate(epoch);
  return anneal(ph->start_lr, ph->end_lr, pct);
}

double OneCycleLR::momentum_at(int64_t epoch) const {
  auto [ph, pct] = locate(epoch);
  return anneal(ph->start_momentum, ph->end_momentum, pct);
}

void OneCycleLR::on_epoch(int64_t epoch) {
  if (!momentum_key_) return;
  const double m = momentum_at(epoch);
  for (auto& g : optimizer_.param_groups()) g.set(momentum_key_, m);
}

// ---- ReduceLROnPlateau --------------------------------------------------------------------------
ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& o)
    : optimizer_(optimizer), o_(o) {
  IGNIS_CHECK(o.factor < 1, ValueError, "[ReduceLROnPlateau] factor should be < 1.0, got {}",
              o.factor);
  best_ = o.mode == ReduceLROnPlateauOptions::Mode::Min ? std::numeric_limits<double>::infinity()
                                                        : -std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::is_better(double a) const {
  using M = ReduceLROnPlateauOptions::Mode;
  using T = ReduceLROnPlateauOptions::ThresholdMode;
  const bool rel = o_.threshold_mode == T::Rel;
  if (o_.mode == M::Min) return a < (rel ? best_ * (1 - o_.threshold) : best_ - o_.threshold);
  return a > (rel ? best_ * (1 + o_.threshold) : best_ + o_.threshold);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs during cooldown do not count
  }
  if (num_bad_epochs_ > o_.patience) {
    for (auto& g : optimizer_.param_groups()) {
      const double old_lr = g.get("lr");
      const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
      if (old_lr - new_lr > o_.eps) g.set("lr", new_lr);
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
}

std::vector<double> ReduceLROnPlateau::get_last_lr() const {
  std::vector<double> out;
  for (const auto& g : optimizer_.param_groups()) out.push_back(g.get("lr"));
  return out;
}

}  // namespace ignis::optim
