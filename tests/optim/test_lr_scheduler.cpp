// LR schedulers: 100-step lr sequences against PyTorch's step-by-step (recursive) rules or
// closed forms written here, for two parameter groups with different base lrs; OneCycleLR's
// phases and momentum; ReduceLROnPlateau against a hand-traced metric sequence.
#include <cmath>
#include <functional>

#include "support/test_support.h"

namespace ignis {
namespace {

using Vec = std::vector<double>;
constexpr double kBase[2] = {0.1, 0.03};

// SGD over two groups with lrs kBase[0], kBase[1].
struct TwoGroups {
  Tensor p = zeros({2}).requires_grad_(), q = zeros({2}).requires_grad_();
  optim::SGD opt{{p}, {.lr = kBase[0], .momentum = 0.9}};
  TwoGroups() { opt.add_param_group({q}, {{"lr", kBase[1]}}); }
  double lr(size_t g) const { return opt.param_groups()[g].get("lr"); }
};

// Steps the scheduler 100 times; expected(epoch, group, previous lr) gives each lr.
void expect_sequence(TwoGroups& s, optim::LRScheduler& sched,
                     const std::function<double(int64_t, size_t, double)>& expected,
                     double rtol = 1e-12, int64_t steps = 100) {
  double prev[2] = {kBase[0], kBase[1]};
  for (int64_t e = 0; e <= steps; ++e) {
    if (e > 0) sched.step();
    ASSERT_EQ(sched.last_epoch(), e);
    for (size_t g = 0; g < 2; ++g) {
      const double want = expected(e, g, prev[g]);
      ASSERT_NEAR(s.lr(g), want, rtol * std::abs(want) + 1e-15) << "epoch " << e << " group " << g;
      ASSERT_EQ(sched.get_last_lr()[g], s.lr(g));
      prev[g] = want;
    }
  }
}

TEST(LRScheduler, StepLRIsRecursiveDecay) {
  TwoGroups s;
  optim::StepLR sched(s.opt, 7, 0.5);
  // PyTorch's rule: multiply by gamma when epoch is a positive multiple of step_size.
  expect_sequence(s, sched, [](int64_t e, size_t g, double prev) {
    return e == 0 ? kBase[g] : (e % 7 == 0 ? prev * 0.5 : prev);
  });
}

TEST(LRScheduler, MultiStepLR) {
  TwoGroups s;
  optim::MultiStepLR sched(s.opt, {60, 10, 30, 30}, 0.2);  // unsorted, 30 twice
  expect_sequence(s, sched, [](int64_t e, size_t g, double prev) {
    if (e == 0) return kBase[g];
    const int hits = (e == 10) + (e == 30) * 2 + (e == 60);
    return prev * std::pow(0.2, hits);
  });
}

TEST(LRScheduler, ExponentialLR) {
  TwoGroups s;
  optim::ExponentialLR sched(s.opt, 0.97);
  expect_sequence(s, sched, [](int64_t e, size_t g, double prev) {
    return e == 0 ? kBase[g] : prev * 0.97;
  }, 1e-12);
}

TEST(LRScheduler, CosineAnnealingClosedFormEqualsPyTorchsRecursion) {
  TwoGroups s;
  const int64_t T = 30;
  const double eta_min = 0.001;
  optim::CosineAnnealingLR sched(s.opt, T, eta_min);
  // PyTorch 1.13's CosineAnnealingLR.get_lr, which runs past T_max (periodic).
  expect_sequence(s, sched, [&](int64_t e, size_t g, double prev) {
    const double b = kBase[g];
    if (e == 0) return b;
    if ((e - 1 - T) % (2 * T) == 0) return prev + (b - eta_min) * (1 - std::cos(M_PI / T)) / 2;
    return (1 + std::cos(M_PI * e / T)) / (1 + std::cos(M_PI * (e - 1) / T)) * (prev - eta_min) +
           eta_min;
  }, 1e-9);
}

TEST(LRScheduler, LambdaLRScalesEachGroupsBase) {
  TwoGroups s;
  // airbench's warm-up/warm-down shape, a function PyTorch's other schedulers cannot express.
  auto factor = [](int64_t e) { return e < 23 ? 0.2 + 0.8 * double(e) / 23 : 1.0 - 0.01 * double(e - 23); };
  optim::LambdaLR sched(s.opt, factor);
  expect_sequence(s, sched, [&](int64_t e, size_t g, double) { return kBase[g] * factor(e); });
  EXPECT_THROW_MSG(optim::LambdaLR(s.opt, nullptr), ValueError, "[LambdaLR]");
}

TEST(LRScheduler, LinearLRWarmUp) {
  TwoGroups s;
  const double f0 = 0.25, f1 = 0.9;
  const int64_t total = 12;
  optim::LinearLR sched(s.opt, f0, f1, total);
  // PyTorch 1.13's recursive LinearLR.get_lr.
  expect_sequence(s, sched, [&](int64_t e, size_t g, double prev) {
    if (e == 0) return kBase[g] * f0;
    if (e > total) return prev;
    return prev * (1 + (f1 - f0) / (total * f0 + (e - 1) * (f1 - f0)));
  }, 1e-12);
  TwoGroups s2;
  EXPECT_THROW_MSG(optim::LinearLR(s2.opt, 0), ValueError, "start_factor must be in (0, 1]");
}

TEST(LRScheduler, SequentialLRRestartsEachSchedulerAtItsMilestone) {
  TwoGroups s;
  optim::LinearLR warmup(s.opt, 0.1, 1.0, 5);
  optim::CosineAnnealingLR cosine(s.opt, 95);
  optim::SequentialLR sched(s.opt, {warmup, cosine}, {5});
  expect_sequence(s, sched, [](int64_t e, size_t g, double) {
    const double b = kBase[g];
    if (e < 5) return b * (0.1 + 0.9 * double(e) / 5);
    return b * (1 + std::cos(M_PI * double(e - 5) / 95)) / 2;
  });
  TwoGroups s2;
  optim::StepLR a(s2.opt, 3);
  EXPECT_THROW_MSG(optim::SequentialLR(s2.opt, {a}, {4}), ValueError,
                   "expects 0 milestones for 1 schedulers, got 1");
}

// PyTorch's OneCycleLR phases written out: lr and momentum at step e.
struct OneCycleRef {
  double max_lr;
  int64_t total;
  optim::OneCycleLROptions o;
  std::pair<double, double> at(int64_t e) const {
    const double init = max_lr / o.div_factor, min = init / o.final_div_factor;
    const double p = o.pct_start * double(total);
    struct P { double end, lr0, lr1, m0, m1; };
    std::vector<P> ph;
    if (o.three_phase)
      ph = {{p - 1, init, max_lr, o.max_momentum, o.base_momentum},
            {2 * p - 2, max_lr, init, o.base_momentum, o.max_momentum},
            {double(total) - 1, init, min, o.max_momentum, o.max_momentum}};
    else
      ph = {{p - 1, init, max_lr, o.max_momentum, o.base_momentum},
            {double(total) - 1, max_lr, min, o.base_momentum, o.max_momentum}};
    double start = 0;
    for (size_t i = 0; i < ph.size(); ++i) {
      if (double(e) <= ph[i].end || i + 1 == ph.size()) {
        const double pct = (double(e) - start) / (ph[i].end - start);
        auto f = [&](double a, double b) {
          return o.anneal_strategy == optim::OneCycleLROptions::Anneal::Cos
                     ? b + (a - b) / 2 * (std::cos(M_PI * pct) + 1)
                     : (b - a) * pct + a;
        };
        return {f(ph[i].lr0, ph[i].lr1), f(ph[i].m0, ph[i].m1)};
      }
      start = ph[i].end;
    }
    return {0, 0};
  }
};

TEST(LRScheduler, OneCycleLR) {
  using A = optim::OneCycleLROptions::Anneal;
  for (auto [anneal, three] : {std::pair{A::Cos, false}, std::pair{A::Linear, false},
                               std::pair{A::Cos, true}, std::pair{A::Linear, true}}) {
    TwoGroups s;
    optim::OneCycleLROptions o{.pct_start = 0.25, .anneal_strategy = anneal, .three_phase = three};
    optim::OneCycleLR sched(s.opt, 0.5, 100, o);
    OneCycleRef ref{0.5, 100, o};
    for (int64_t e = 0; e <= 100; ++e) {
      if (e > 0) sched.step();
      auto [lr, m] = ref.at(e);
      for (size_t g = 0; g < 2; ++g) {
        ASSERT_NEAR(s.lr(g), lr, 1e-12) << e;
        ASSERT_NEAR(s.opt.param_groups()[g].get("momentum"), m, 1e-12) << e;
      }
    }
    EXPECT_THROW_MSG(sched.step(), ValueError, "tried to step 101 times");
  }
  // Adam: beta1 is cycled.
  Tensor p = zeros({1}).requires_grad_();
  optim::Adam adam({p});
  optim::OneCycleLR sched(adam, 0.01, 10);
  EXPECT_DOUBLE_EQ(adam.param_groups()[0].get("beta1"), 0.95);
  EXPECT_NEAR(adam.param_groups()[0].get("lr"), 0.01 / 25, 1e-15);
  optim::Adagrad ada({p});
  EXPECT_THROW_MSG(optim::OneCycleLR(ada, 0.1, 10), ValueError, "no momentum or beta1 to cycle");
}

TEST(LRScheduler, OneCycleLRRefusesAStepInAnEmptyPhase) {
  // PyTorch raises (ZeroDivisionError) where a phase has no steps; a NaN or infinite lr would
  // otherwise reach the optimizer. Phase ends are pct_start * total_steps - 1 as Python
  // computes them: with pct_start 1 the annealing phase is empty and the last step falls in it;
  // with pct_start * total_steps = 1 the warm-up is, from the constructor on (0.1 * 10 - 1 is
  // exactly 0 without a fused multiply-add).
  for (double pct : {1.0, 0.5, 0.1}) {
    SCOPED_TRACE(pct);
    TwoGroups s;
    const int64_t total = pct == 1.0 ? 8 : pct == 0.5 ? 2 : 10;
    auto make = [&] { return optim::OneCycleLR(s.opt, 0.5, total, {.pct_start = pct}); };
    if (pct != 1.0) {
      EXPECT_THROW_MSG(make(), ValueError, "[OneCycleLR] step 0 falls in phase 1, which is empty");
      continue;
    }
    optim::OneCycleLR sched = make();
    for (int64_t e = 1; e < total; ++e) {
      sched.step();
      EXPECT_TRUE(std::isfinite(s.lr(0))) << e;
    }
    EXPECT_THROW_MSG(
        sched.step(), ValueError, "[OneCycleLR] step 8 falls in phase 2, which is empty");
  }
  // Three phases whose third is empty: 2 * 0.6 * 5 - 2 == 5 - 1.
  TwoGroups s;
  optim::OneCycleLR sched(s.opt, 0.5, 5, {.pct_start = 0.6, .three_phase = true});
  for (int64_t e = 1; e < 5; ++e) sched.step();
  EXPECT_THROW_MSG(sched.step(), ValueError, "step 5 falls in phase 3, which is empty");
}

TEST(LRScheduler, ReduceLROnPlateauTracedByHand) {
  TwoGroups s;
  optim::ReduceLROnPlateau sched(s.opt, {.factor = 0.5, .patience = 2, .cooldown = 1});
  // epoch: metric -> bad epochs -> lr of group 0 (traced from PyTorch's rules: reduce when
  // bad epochs exceed patience, then a cooldown epoch in which bad epochs do not count).
  const Vec metrics = {10, 9, 9, 9, 9, 9, 9, 9, 9, 8, 8};
  const Vec factors = {1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25};
  for (size_t e = 0; e < metrics.size(); ++e) {
    sched.step(metrics[e]);
    EXPECT_DOUBLE_EQ(s.lr(0), kBase[0] * factors[e]) << e;
    EXPECT_DOUBLE_EQ(s.lr(1), kBase[1] * factors[e]) << e;
  }
  // min_lr floors the lr; max mode with an absolute threshold.
  TwoGroups s2;
  optim::ReduceLROnPlateau up(s2.opt, {.mode = optim::ReduceLROnPlateauOptions::Mode::Max,
                                       .factor = 0.1, .patience = 0, .threshold = 0.5,
                                       .threshold_mode = optim::ReduceLROnPlateauOptions::ThresholdMode::Abs,
                                       .min_lr = 0.05});
  up.step(1.0);   // better than -inf
  up.step(1.4);   // not better than 1.0 + 0.5: group 0 drops to max(0.01, min_lr 0.05)
  EXPECT_DOUBLE_EQ(s2.lr(0), 0.05);
  EXPECT_DOUBLE_EQ(s2.lr(1), 0.03);  // max(0.003, 0.05) would raise it: skipped
  up.step(1.6);   // better
  EXPECT_DOUBLE_EQ(up.best(), 1.6);
  EXPECT_EQ(up.get_last_lr(), (Vec{0.05, 0.03}));
}

}  // namespace
}  // namespace ignis
