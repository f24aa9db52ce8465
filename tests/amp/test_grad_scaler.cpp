// amp::GradScaler: the scaled loss and its gradients, unscaling across dtypes, skipped steps on
// inf/NaN, and the scale schedule (backoff, growth after the interval) against values worked
// out by hand from PyTorch's rules; state_dict round trips and misuse errors.
#include <cmath>
#include <limits>

#include "support/test_support.h"

namespace ignis {
namespace {

using testing::all_close;
using Vec = std::vector<double>;

/// loss = sum(p * c): dloss/dp = c, so the gradient after scale() is c * scale.
Tensor linear_loss(const Tensor& p, const Vec& c) {
  return (p * tensor(c, p.sizes()).to(p.dtype())).sum();
}

TEST(GradScaler, DefaultsArePyTorchs) {
  amp::GradScaler s;
  const auto sd = s.state_dict();
  EXPECT_EQ(sd.at("scale"), 65536.0);
  EXPECT_EQ(sd.at("growth_factor"), 2.0);
  EXPECT_EQ(sd.at("backoff_factor"), 0.5);
  EXPECT_EQ(sd.at("growth_interval"), 2000.0);
  EXPECT_EQ(sd.at("_growth_tracker"), 0.0);
}

TEST(GradScaler, ScaleThenUnscaleGivesTheTrueGradient) {
  Tensor p = tensor(Vec{1, 2, 3}, Shape{3}).to(kFloat32).requires_grad_();
  const Vec c = {0.25, -3, 1e-3};
  optim::SGD opt({p}, {.lr = 1.0});
  amp::GradScaler s({.init_scale = 1024});
  Tensor scaled = s.scale(linear_loss(p, c));
  EXPECT_NEAR(scaled.item<double>(), 1024.0 * (0.25 * 1 - 3 * 2 + 1e-3 * 3), 1e-3);
  scaled.backward();
  EXPECT_TRUE(all_close(p.grad(), {256, -3072, 1.024}, 1e-6, 0));
  s.unscale_(opt);
  EXPECT_TRUE(all_close(p.grad(), c, 1e-6, 0));
  EXPECT_TRUE(s.step(opt));  // the step uses the unscaled gradient, not unscaled twice
  EXPECT_TRUE(all_close(p, {0.75, 5, 2.999}, 1e-6, 0));
  s.update();
}

TEST(GradScaler, UnscalesEveryDtypeAndFindsInfInAny) {
  // Gradients of four dtypes in one optimizer: each group is unscaled; a NaN in the bf16
  // one alone makes the step skip.
  std::vector<Tensor> ps;
  for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16})
    ps.push_back(tensor(Vec{1, -1}, Shape{2}).to(t).requires_grad_());
  optim::SGD opt(ps, {.lr = 0.1});
  amp::GradScaler s({.init_scale = 8});
  for (Tensor& p : ps) p.mutable_grad() = tensor(Vec{8, -4}, Shape{2}).to(p.dtype());
  s.unscale_(opt);
  for (const Tensor& p : ps) {
    EXPECT_TRUE(all_close(p.grad(), {1, -0.5}, 0, 0)) << dtype_name(p.dtype());
    EXPECT_EQ(p.grad().dtype(), p.dtype());
  }
  EXPECT_TRUE(s.step(opt));
  s.update();
  for (Tensor& p : ps) p.mutable_grad() = tensor(Vec{8, -4}, Shape{2}).to(p.dtype());
  ps[2].mutable_grad() = tensor(Vec{8, std::nan("")}, Shape{2}).to(kBFloat16);
  const Vec before = testing::values_of(ps[0]);
  EXPECT_FALSE(s.step(opt));
  EXPECT_EQ(testing::values_of(ps[0]), before) << "a step with a NaN gradient must be skipped";
  s.update();
  EXPECT_EQ(s.get_scale(), 4.0);
}

TEST(GradScaler, DenseAndStridedGradientsAreUnscaled) {
  // A transposed gradient is dense: the kernel scales its storage as one run. A strided view
  // (every other element) takes the ops, the path devices without the fused kernel take. The
  // NaN must be found on both.
  Tensor p = zeros({2, 3}).requires_grad_();
  optim::SGD opt({p}, {.lr = 1.0});
  amp::GradScaler s({.init_scale = 4});
  p.mutable_grad() = tensor(Vec{4, 8, -12, 16, 20, 24}, Shape{3, 2}).to(kFloat32).t();
  ASSERT_FALSE(p.grad().is_contiguous());
  s.unscale_(opt);
  EXPECT_TRUE(all_close(p.grad(), {1, -3, 5, 2, 4, 6}, 0, 0));
  EXPECT_TRUE(s.step(opt));
  s.update();
  p.mutable_grad() = tensor(Vec{4, 8, std::nan(""), 16, 20, 24}, Shape{3, 2}).to(kFloat32).t();
  EXPECT_FALSE(s.step(opt));
  s.update();
  EXPECT_EQ(s.get_scale(), 2.0);
  // Every other element of a [2, 6] tensor: neither contiguous nor dense.
  const Tensor wide = tensor(Vec{2, 7, 4, 7, 6, 7, 8, 7, 10, 7, 12, 7}, Shape{2, 6}).to(kFloat32);
  p.mutable_grad() = wide.slice(1, 0, 6, 2);
  s.unscale_(opt);
  EXPECT_TRUE(all_close(p.grad(), {1, 2, 3, 4, 5, 6}, 0, 0));
  // The elements between the view's are not touched.
  EXPECT_TRUE(all_close(wide, {1, 7, 2, 7, 3, 7, 4, 7, 5, 7, 6, 7}, 0, 0));
  EXPECT_TRUE(s.step(opt));
  s.update();
  p.mutable_grad() = tensor(Vec{2, 0, std::nan(""), 0, 6, 0, 8, 0, 10, 0, 12, 0}, Shape{2, 6})
                         .to(kFloat32)
                         .slice(1, 0, 6, 2);
  EXPECT_FALSE(s.step(opt));
}

TEST(GradScaler, ScheduleBacksOffAndGrows) {
  // Hand-worked schedule with init 16, growth 2, backoff 0.5, interval 3:
  //   step:   1    2    3(inf) 4    5    6     7    8    9
  //   scale after update: 16, 16, 8, 8, 8, 16, 16, 16, 32
  //   tracker:             1,  2, 0, 1, 2,  0,  1,  2,  0
  Tensor p = zeros({2}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.5});
  amp::GradScaler s(
      {.init_scale = 16, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 3});
  const double inf = std::numeric_limits<double>::infinity();
  const Vec scales = {16, 16, 8, 8, 8, 16, 16, 16, 32};
  const Vec trackers = {1, 2, 0, 1, 2, 0, 1, 2, 0};
  double expect_p = 0;
  for (int step = 1; step <= 9; ++step) {
    const double scale = s.get_scale();
    const bool bad = step == 3;
    p.mutable_grad() = tensor(Vec{bad ? inf : scale * 0.25, scale * 0.25}, Shape{2});
    EXPECT_EQ(s.step(opt), !bad) << "step " << step;
    if (!bad) expect_p -= 0.5 * 0.25;
    s.update();
    EXPECT_EQ(s.get_scale(), scales[size_t(step - 1)]) << "step " << step;
    EXPECT_EQ(s.growth_tracker(), int64_t(trackers[size_t(step - 1)])) << "step " << step;
    EXPECT_EQ(testing::values_of(p)[1], expect_p) << "step " << step;
  }
}

TEST(GradScaler, StateDictContinuesTheSchedule) {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.1});
  amp::GradScaler a({.init_scale = 4, .growth_interval = 2});
  p.mutable_grad() = ones({1});
  a.step(opt);
  a.update();  // tracker 1
  amp::GradScaler b;
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.get_scale(), 4.0);
  EXPECT_EQ(b.growth_tracker(), 1);
  p.mutable_grad() = ones({1});
  b.step(opt);
  b.update();
  EXPECT_EQ(b.get_scale(), 8.0);  // grew after the interval counted across the reload
  auto sd = a.state_dict();
  sd.erase("scale");
  EXPECT_THROW_MSG(b.load_state_dict(sd), ValueError, "\"scale\"");
  sd = a.state_dict();
  sd["scale"] = -1;
  EXPECT_THROW_MSG(b.load_state_dict(sd), ValueError, "positive");
  // The growth options obey the constructor's rules (an interval of 0 would stop growth for
  // good), and a refused state leaves the scaler as it was.
  for (const auto& [key, bad] : std::vector<std::pair<std::string, double>>{
           {"growth_interval", 0}, {"growth_interval", 2.5}, {"growth_factor", 1},
           {"backoff_factor", 1.5}}) {
    SCOPED_TRACE(key);
    sd = a.state_dict();
    sd[key] = bad;
    EXPECT_THROW_MSG(b.load_state_dict(sd), ValueError, "the saved " + key);
  }
  EXPECT_EQ(b.get_scale(), 8.0);
  // A reload starts a fresh step: this optimizer may be unscaled again.
  p.mutable_grad() = ones({1});
  b.unscale_(opt);
  b.load_state_dict(a.state_dict());
  b.unscale_(opt);
}

TEST(GradScaler, MisuseIsRefused) {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.1});
  amp::GradScaler s;
  EXPECT_THROW_MSG(s.update(), ValueError, "no inf checks");
  p.mutable_grad() = ones({1});
  s.unscale_(opt);
  EXPECT_THROW_MSG(s.unscale_(opt), ValueError, "already been called");
  s.step(opt);
  EXPECT_THROW_MSG(s.step(opt), ValueError, "already been called");
  s.update();
  EXPECT_THROW_MSG(amp::GradScaler({.init_scale = 0}), ValueError, "init_scale");
  EXPECT_THROW_MSG(amp::GradScaler({.backoff_factor = 1}), ValueError, "backoff_factor");
}

TEST(GradScaler, DisabledPassesThrough) {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.5});
  amp::GradScaler s({.enabled = false});
  Tensor loss = linear_loss(p, {2});
  EXPECT_EQ(s.scale(loss).item<double>(), 2.0);
  s.scale(loss).backward();
  EXPECT_TRUE(s.step(opt));
  s.update();
  EXPECT_EQ(p.item<double>(), 0.0);
  EXPECT_EQ(s.get_scale(), 1.0);
  EXPECT_TRUE(s.state_dict().empty());
}

}  // namespace
}  // namespace ignis
