// Optimizers: gradients set by hand for several steps, parameter trajectories compared with
// float64 re-implementations of PyTorch 1.13's update formulas written here; state-dict round
// trips continue the same trajectory; gradient clipping against computed norms.
#include <cmath>
#include <functional>
#include <memory>

#include "support/test_support.h"

namespace ignis {
namespace {

using testing::all_close;
using testing::random_values;
using testing::values_of;
using Vec = std::vector<double>;

constexpr int64_t kN = 12;  // parameter [3, 4]

// The gradient of step k (same for the optimizer and the reference).
Vec grad_at(int k) { return random_values(kN, -1, 1, 1000 + uint64_t(k)); }

// A float64 reference optimizer: updates p given g, keeping its own state.
using RefStep = std::function<void(Vec& p, const Vec& g)>;

// Runs `steps` steps of opt on a [3, 4] float64 parameter and of ref on a copy, comparing
// after every step.
void expect_trajectory(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make,
                       const RefStep& ref, const char* what, int steps = 6) {
  Vec pv = random_values(kN, -1, 1, 99);
  Tensor p = tensor(pv, Shape{3, 4}).requires_grad_();
  auto opt = make({p});
  for (int k = 0; k < steps; ++k) {
    Vec g = grad_at(k);
    p.mutable_grad() = tensor(g, Shape{3, 4});
    opt->step();
    ref(pv, g);
    ASSERT_TRUE(all_close(p, pv, 1e-12, 1e-14)) << what << " step " << k;
  }
}

Vec add(const Vec& a, const Vec& b, double alpha = 1) {
  Vec o(a.size());
  for (size_t i = 0; i < a.size(); ++i) o[i] = a[i] + alpha * b[i];
  return o;
}

struct SGDCase {
  double momentum, dampening, wd;
  bool nesterov, maximize;
};

TEST(SGD, TrajectoryEveryOption) {
  const double lr = 0.1;
  for (SGDCase c : {SGDCase{0, 0, 0, false, false}, SGDCase{0.9, 0, 0, false, false},
                    SGDCase{0.9, 0.3, 0.01, false, false}, SGDCase{0.8, 0, 0.05, true, false},
                    SGDCase{0.5, 0, 0.1, false, true}, SGDCase{0, 0, 0.1, false, true}}) {
    auto buf = std::make_shared<Vec>();
    RefStep ref = [=](Vec& p, const Vec& g0) {
      Vec d = g0;
      if (c.maximize) for (auto& v : d) v = -v;
      if (c.wd) d = add(d, p, c.wd);
      if (c.momentum) {
        if (buf->empty()) *buf = d;
        else for (size_t i = 0; i < d.size(); ++i) (*buf)[i] = c.momentum * (*buf)[i] + (1 - c.dampening) * d[i];
        d = c.nesterov ? add(d, *buf, c.momentum) : *buf;
      }
      p = add(p, d, -lr);
    };
    expect_trajectory([&](std::vector<Tensor> ps) {
      return std::make_unique<optim::SGD>(ps, optim::SGDOptions{
          .lr = lr, .momentum = c.momentum, .dampening = c.dampening, .weight_decay = c.wd,
          .nesterov = c.nesterov, .maximize = c.maximize});
    }, ref, "SGD");
  }
}

struct AdamCase {
  bool decoupled, amsgrad, maximize;
  double wd;
};

TEST(Adam, TrajectoryEveryOption) {
  const double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-6;
  for (AdamCase c : {AdamCase{false, false, false, 0}, AdamCase{false, true, false, 0.1},
                     AdamCase{false, false, true, 0.05}, AdamCase{true, false, false, 0.1},
                     AdamCase{true, true, true, 0.2}}) {
    auto m = std::make_shared<Vec>(kN, 0.0), v = std::make_shared<Vec>(kN, 0.0),
         vmax = std::make_shared<Vec>(kN, 0.0);
    auto t = std::make_shared<int>(0);
    RefStep ref = [=](Vec& p, const Vec& g0) {
      ++*t;
      Vec g = g0;
      if (c.maximize) for (auto& x : g) x = -x;
      if (c.decoupled) for (auto& x : p) x *= 1 - lr * c.wd;
      else if (c.wd) g = add(g, p, c.wd);
      for (int64_t i = 0; i < kN; ++i) {
        (*m)[i] = b1 * (*m)[i] + (1 - b1) * g[i];
        (*v)[i] = b2 * (*v)[i] + (1 - b2) * g[i] * g[i];
        (*vmax)[i] = std::max((*vmax)[i], (*v)[i]);
        const double vhat = (c.amsgrad ? (*vmax)[i] : (*v)[i]) / (1 - std::pow(b2, *t));
        p[i] -= lr * ((*m)[i] / (1 - std::pow(b1, *t))) / (std::sqrt(vhat) + eps);
      }
    };
    expect_trajectory([&](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
      if (c.decoupled)
        return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions{
            .lr = lr, .betas = {b1, b2}, .eps = eps, .weight_decay = c.wd, .amsgrad = c.amsgrad,
            .maximize = c.maximize});
      return std::make_unique<optim::Adam>(ps, optim::AdamOptions{
          .lr = lr, .betas = {b1, b2}, .eps = eps, .weight_decay = c.wd, .amsgrad = c.amsgrad,
          .maximize = c.maximize});
    }, ref, c.decoupled ? "AdamW" : "Adam");
  }
}

TEST(RMSprop, TrajectoryEveryOption) {
  const double lr = 0.01, alpha = 0.9, eps = 1e-6;
  for (const auto& option :
       {std::tuple{0.0, false, 0.0, false}, std::tuple{0.9, false, 0.0, false},
        std::tuple{0.0, true, 0.1, false}, std::tuple{0.7, true, 0.05, true}}) {
    // Plain variables, not a structured binding: clang 14 (the sanitizer builds) cannot
    // capture one in a lambda.
    const double momentum = std::get<0>(option), wd = std::get<2>(option);
    const bool centered = std::get<1>(option), maximize = std::get<3>(option);
    auto sq = std::make_shared<Vec>(kN, 0.0), ga = std::make_shared<Vec>(kN, 0.0),
         buf = std::make_shared<Vec>(kN, 0.0);
    RefStep ref = [=](Vec& p, const Vec& g0) {
      Vec g = g0;
      if (maximize) for (auto& x : g) x = -x;
      if (wd) g = add(g, p, wd);
      for (int64_t i = 0; i < kN; ++i) {
        (*sq)[i] = alpha * (*sq)[i] + (1 - alpha) * g[i] * g[i];
        double avg = (*sq)[i];
        if (centered) {
          (*ga)[i] = alpha * (*ga)[i] + (1 - alpha) * g[i];
          avg -= (*ga)[i] * (*ga)[i];
        }
        avg = std::sqrt(avg) + eps;
        if (momentum > 0) {
          (*buf)[i] = momentum * (*buf)[i] + g[i] / avg;
          p[i] -= lr * (*buf)[i];
        } else {
          p[i] -= lr * g[i] / avg;
        }
      }
    };
    expect_trajectory([&](std::vector<Tensor> ps) {
      return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions{
          .lr = lr, .alpha = alpha, .eps = eps, .weight_decay = wd, .momentum = momentum,
          .centered = centered, .maximize = maximize});
    }, ref, "RMSprop");
  }
}

TEST(Adagrad, TrajectoryEveryOption) {
  const double lr = 0.1, eps = 1e-10;
  for (const auto& option :
       {std::tuple{0.0, 0.0, 0.0, false}, std::tuple{0.1, 0.0, 0.5, false},
        std::tuple{0.05, 0.1, 0.1, true}}) {
    // Plain variables for clang 14, as in RMSprop above.
    const double lr_decay = std::get<0>(option), wd = std::get<1>(option),
                 init = std::get<2>(option);
    const bool maximize = std::get<3>(option);
    auto sum = std::make_shared<Vec>(kN, init);
    auto t = std::make_shared<int>(0);
    RefStep ref = [=](Vec& p, const Vec& g0) {
      ++*t;
      Vec g = g0;
      if (maximize) for (auto& x : g) x = -x;
      if (wd) g = add(g, p, wd);
      const double clr = lr / (1 + (*t - 1) * lr_decay);
      for (int64_t i = 0; i < kN; ++i) {
        (*sum)[i] += g[i] * g[i];
        p[i] -= clr * g[i] / (std::sqrt((*sum)[i]) + eps);
      }
    };
    expect_trajectory([&](std::vector<Tensor> ps) {
      return std::make_unique<optim::Adagrad>(ps, optim::AdagradOptions{
          .lr = lr, .lr_decay = lr_decay, .weight_decay = wd, .initial_accumulator_value = init,
          .maximize = maximize});
    }, ref, "Adagrad");
  }
}

// Three steps, snapshot, three more on the original and on a fresh optimizer loaded from the
// snapshot (over a copy of the parameters): both must follow the same trajectory.
template <class Opt, class Options>
void expect_state_dict_round_trip(const Options& options, const char* what) {
  Tensor a = tensor(random_values(kN, -1, 1, 5), Shape{3, 4}).requires_grad_();
  Tensor a2 = tensor(random_values(4, -1, 1, 6)).requires_grad_();
  Opt opt({a}, options);
  opt.add_param_group({a2});
  auto set_grads = [&](int k) {
    a.mutable_grad() = tensor(grad_at(k), Shape{3, 4});
    a2.mutable_grad() = tensor(grad_at(k + 50)).narrow(0, 0, 4).contiguous();
  };
  for (int k = 0; k < 3; ++k) set_grads(k), opt.step();
  optim::OptimizerStateDict sd = opt.state_dict();
  Tensor b = a.detach().clone().requires_grad_(), b2 = a2.detach().clone().requires_grad_();
  Opt restored({b}, options);
  restored.add_param_group({b2});
  restored.load_state_dict(sd);
  for (int k = 3; k < 6; ++k) {
    set_grads(k);
    b.mutable_grad() = a.grad(), b2.mutable_grad() = a2.grad();
    opt.step();
    restored.step();
    EXPECT_EQ(values_of(b), values_of(a)) << what << " step " << k;
    EXPECT_EQ(values_of(b2), values_of(a2)) << what << " step " << k;
  }
}

TEST(Optimizer, StateDictRoundTripContinuesTheTrajectory) {
  expect_state_dict_round_trip<optim::SGD>(optim::SGDOptions{.lr = 0.1, .momentum = 0.9}, "SGD");
  expect_state_dict_round_trip<optim::Adam>(optim::AdamOptions{.lr = 0.01, .amsgrad = true}, "Adam");
  expect_state_dict_round_trip<optim::AdamW>(optim::AdamWOptions{.lr = 0.01}, "AdamW");
  expect_state_dict_round_trip<optim::RMSprop>(
      optim::RMSpropOptions{.momentum = 0.5, .centered = true}, "RMSprop");
  expect_state_dict_round_trip<optim::Adagrad>(optim::AdagradOptions{.lr_decay = 0.1}, "Adagrad");
}

TEST(Optimizer, StateDictLayoutAndMismatches) {
  Tensor p = zeros({2, 2}).requires_grad_(), q = zeros({3}).requires_grad_();
  optim::Adam opt({p, q}, {.lr = 0.5});
  p.mutable_grad() = ones({2, 2});  // q has no gradient: no state, not updated
  opt.step();
  auto sd = opt.state_dict();
  ASSERT_EQ(sd.state.size(), 1u);
  EXPECT_EQ(sd.state.at(0).at("step").item<double>(), 1.0);
  EXPECT_EQ(sd.state.at(0).at("exp_avg").sizes(), (Shape{2, 2}));
  EXPECT_EQ(sd.param_groups[0].params, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sd.param_groups[0].options.at("lr"), 0.5);
  EXPECT_EQ(sd.param_groups[0].options.at("beta2"), 0.999);
  EXPECT_EQ(values_of(q), Vec(3, 0.0));
  optim::Adam other({zeros({3}).requires_grad_(), zeros({3}).requires_grad_()});
  EXPECT_THROW_MSG(other.load_state_dict(sd), ValueError,
                   "[Adam] loaded state 'exp_avg' of parameter 0 has shape [2, 2], the parameter [3]");
  optim::Adam one({zeros({3}).requires_grad_()});
  EXPECT_THROW_MSG(one.load_state_dict(sd), ValueError,
                   "[Adam] loaded group 0 has 2 parameters, the optimizer's has 1");
}

TEST(Optimizer, GroupsZeroGradAndValidation) {
  Tensor p = ones({2}, kFloat64).requires_grad_(), q = ones({2}, kFloat64).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.1});
  opt.add_param_group({q}, {{"lr", 1.0}});
  EXPECT_EQ(opt.param_groups()[1].get("momentum"), 0.0);  // missing options take the defaults
  p.mutable_grad() = ones({2}, kFloat64), q.mutable_grad() = ones({2}, kFloat64);
  opt.step();
  EXPECT_EQ(values_of(p), Vec(2, 0.9));
  EXPECT_EQ(values_of(q), Vec(2, 0.0));
  opt.zero_grad(false);
  EXPECT_EQ(values_of(p.grad()), Vec(2, 0.0));
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined() || q.grad().defined());
  EXPECT_THROW_MSG(opt.add_param_group({p}), ValueError, "more than one parameter group");
  EXPECT_THROW_MSG(opt.add_param_group({ones({1}).requires_grad_()}, {{"betas", 1.0}}), ValueError,
                   "unknown option 'betas'");
  EXPECT_THROW_MSG(optim::SGD({p}, {}), ValueError, "[SGD] lr is required");
  EXPECT_THROW_MSG(optim::SGD({p}, {.lr = -1}), ValueError, "[SGD] invalid learning rate: -1");
  EXPECT_THROW_MSG(optim::SGD({p}, {.lr = 0.1, .nesterov = true}), ValueError,
                   "Nesterov momentum requires a momentum");
  EXPECT_THROW_MSG(optim::Adam({p}, {.betas = {1.0, 0.9}}), ValueError,
                   "[Adam] invalid beta1 parameter: 1");
  EXPECT_THROW_MSG(optim::Adam(std::vector<Tensor>{}), ValueError, "empty parameter list");
  EXPECT_THROW_MSG(optim::Adam({zeros({2}, kInt64)}), DTypeError, "can only optimize floating");
}

TEST(ClipGrad, NormAndValue) {
  Tensor p = zeros({3}, kFloat64).requires_grad_(), q = zeros({2, 2}, kFloat64).requires_grad_();
  Tensor r = zeros({2}).requires_grad_();  // no gradient: skipped
  Vec gp = {3, -4, 1}, gq = {2, 0, -1, 5};
  for (double norm_type : {2.0, 1.0, 3.0, double(INFINITY)}) {
    p.mutable_grad() = tensor(gp), q.mutable_grad() = tensor(gq, Shape{2, 2});
    double total = 0;
    for (const Vec* g : {&gp, &gq})
      for (double v : *g)
        total = std::isinf(norm_type) ? std::max(total, std::abs(v))
                                      : total + std::pow(std::abs(v), norm_type);
    if (!std::isinf(norm_type)) total = std::pow(total, 1 / norm_type);
    Tensor n = nn::utils::clip_grad_norm_({p, q, r}, 2.0, norm_type);
    EXPECT_NEAR(n.item<double>(), total, 1e-5 * total) << norm_type;
    const double coef = 2.0 / (total + 1e-6);
    Vec ep, eq;
    for (double v : gp) ep.push_back(v * coef);
    for (double v : gq) eq.push_back(v * coef);
    EXPECT_TRUE(all_close(p.grad(), ep, 1e-6, 1e-7)) << norm_type;
    EXPECT_TRUE(all_close(q.grad(), eq, 1e-6, 1e-7)) << norm_type;
  }
  // Below max_norm: untouched.
  p.mutable_grad() = tensor(gp);
  nn::utils::clip_grad_norm_({p}, 100);
  EXPECT_EQ(values_of(p.grad()), gp);
  p.mutable_grad() = tensor<double>({1, NAN, 2});
  EXPECT_THROW_MSG(nn::utils::clip_grad_norm_({p}, 1, 2, true), ValueError, "non-finite");
  p.mutable_grad() = tensor(gp);
  nn::utils::clip_grad_value_({p, r}, 2.5);
  EXPECT_EQ(values_of(p.grad()), (Vec{2.5, -2.5, 1}));
}

}  // namespace
}  // namespace ignis
