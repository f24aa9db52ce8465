// The autograd engine and the gradients of the elementwise, view and copy ops: analytic
// gradients against central finite differences in float64 (gradcheck), accumulation into
// leaves, graph retention, autograd::grad, hooks, grad mode, in-place rules and the version
// counter's protection of saved tensors.
#include <cmath>

#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

}  // namespace

TEST(Gradcheck, UnaryOps) {
  struct Case {
    const char* name;
    Fn fn;
    double lo, hi;
  };
  const std::vector<Case> cases = {
      {"neg", [](const auto& x) { return neg(x[0]); }, -3, 3},
      {"abs", [](const auto& x) { return abs(x[0]); }, 0.1, 3},
      {"relu", [](const auto& x) { return relu(x[0]); }, 0.1, 3},
      {"relu_neg", [](const auto& x) { return relu(x[0]); }, -3, -0.1},
      {"clamp", [](const auto& x) { return clamp(x[0], -1, 1); }, -0.9, 0.9},
      {"clamp_out", [](const auto& x) { return clamp(x[0], -1, 1); }, 1.1, 3},
      {"exp", [](const auto& x) { return exp(x[0]); }, -2, 2},
      {"log", [](const auto& x) { return log(x[0]); }, 0.5, 3},
      {"log1p", [](const auto& x) { return log1p(x[0]); }, -0.5, 3},
      {"expm1", [](const auto& x) { return expm1(x[0]); }, -2, 2},
      {"sqrt", [](const auto& x) { return sqrt(x[0]); }, 0.5, 3},
      {"rsqrt", [](const auto& x) { return rsqrt(x[0]); }, 0.5, 3},
      {"sin", [](const auto& x) { return sin(x[0]); }, -3, 3},
      {"cos", [](const auto& x) { return cos(x[0]); }, -3, 3},
      {"tanh", [](const auto& x) { return tanh(x[0]); }, -2, 2},
      {"sigmoid", [](const auto& x) { return sigmoid(x[0]); }, -4, 4},
      {"gelu", [](const auto& x) { return gelu(x[0]); }, -3, 3},
      {"gelu_tanh", [](const auto& x) { return gelu(x[0], "tanh"); }, -3, 3},
      {"silu", [](const auto& x) { return silu(x[0]); }, -4, 4},
      {"softplus", [](const auto& x) { return softplus(x[0], 2, 3); }, -2, 2},
      {"reciprocal", [](const auto& x) { return 1.0 / x[0]; }, 0.5, 3},
  };
  for (const auto& c : cases) expect_gradcheck(c.name, c.fn, {random_tensor({3, 4}, c.lo, c.hi, 5)});
}

TEST(Gradcheck, BinaryOpsWithBroadcasting) {
  Tensor a = random_tensor({3, 1, 4}, 0.5, 2, 1), b = random_tensor({5, 1}, 0.5, 2, 2);
  expect_gradcheck("add", [](const auto& x) { return add(x[0], x[1], 2.5); }, {a, b});
  expect_gradcheck("sub", [](const auto& x) { return sub(x[0], x[1], 0.5); }, {a, b});
  expect_gradcheck("mul", [](const auto& x) { return x[0] * x[1]; }, {a, b});
  expect_gradcheck("div", [](const auto& x) { return x[0] / x[1]; }, {a, b});
  expect_gradcheck("pow", [](const auto& x) { return pow(x[0], x[1]); }, {a, b});
  expect_gradcheck("pow_scalar", [](const auto& x) { return pow(x[0], 3); }, {a});
  expect_gradcheck("rpow", [](const auto& x) { return pow(2.0, x[0]); }, {a});
  expect_gradcheck("maximum", [](const auto& x) { return maximum(x[0], x[1]); }, {a, b});
  expect_gradcheck("minimum", [](const auto& x) { return minimum(x[0], x[1]); }, {a, b});
  expect_gradcheck("scalar_ops", [](const auto& x) { return (x[0] * 3 - 1) / 2 + 5.0 / x[0]; }, {a});
  Tensor c = tensor<bool>({true, false, true, false}).view({1, 4});
  expect_gradcheck("where", [c](const auto& x) { return where(c, x[0], x[1]); }, {a, b});
}

TEST(Gradcheck, ViewsAndCopies) {
  Tensor x = random_tensor({3, 4, 5}, -1, 1, 3);
  expect_gradcheck("permute", [](const auto& v) { return v[0].permute({2, 0, 1}) * 2; }, {x});
  expect_gradcheck("transpose_reshape", [](const auto& v) { return v[0].transpose(0, 2).reshape({-1, 3}); }, {x});
  expect_gradcheck("narrow", [](const auto& v) { return v[0].narrow(1, 1, 2); }, {x});
  expect_gradcheck("slice_step", [](const auto& v) { return v[0].slice(2, 1, std::nullopt, 2); }, {x});
  expect_gradcheck("select", [](const auto& v) { return v[0].select(0, -1); }, {x});
  expect_gradcheck("expand", [](const auto& v) { return v[0].unsqueeze(0).expand({2, 3, 4, 5}); }, {x});
  expect_gradcheck("squeeze", [](const auto& v) { return v[0].narrow(0, 1, 1).squeeze(0).flatten(); }, {x});
  expect_gradcheck("view_unflatten", [](const auto& v) { return v[0].view({12, 5}).unflatten(0, {2, 6}); }, {x});
  // Through float32 the finite differences are noise; check the cast's gradient directly.
  Tensor leaf = random_tensor({4}, -1, 1, 7).requires_grad_();
  (leaf.to(kFloat32) * tensor<float>({1, 2, 3, 4})).sum().backward();
  EXPECT_EQ(leaf.grad().dtype(), kFloat64);
  EXPECT_EQ(values_of(leaf.grad()), (std::vector<double>{1, 2, 3, 4}));
  expect_gradcheck("clone_contiguous", [](const auto& v) { return v[0].t().contiguous().clone(); }, {random_tensor({3, 4}, -1, 1, 4)});
  // copy_ into a non-leaf: the result depends on the source only.
  expect_gradcheck("copy_", [](const auto& v) {
    Tensor y = v[0] * 2;
    y.copy_(v[1]);
    return y * v[0];
  }, {random_tensor({3}, -1, 1, 5), random_tensor({3}, -1, 1, 6)});
}

TEST(Backward, AccumulatesAndRetains) {
  Tensor x = tensor<double>({1, 2, 3}).requires_grad_();
  Tensor y = (x * x).sum();
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  y.backward({}, /*retain_graph=*/true);
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{2, 4, 6}));
  y.backward();  // accumulates
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{4, 8, 12}));
  EXPECT_THROW_MSG(y.backward(), ValueError, "a second time");
  Tensor z = x * 2;
  EXPECT_THROW_MSG(z.backward(), ValueError, "implicitly only for one-element outputs");
  z.backward(tensor<double>({1, 0, -1}));
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{6, 8, 10}));
  EXPECT_THROW_MSG(tensor<double>({1.0}).backward(), ValueError, "does not require grad");
  EXPECT_THROW_MSG(tensor<int64_t>({1}).requires_grad_(), ValueError, "only floating-point");
}

TEST(Backward, SharedSubexpressionsAndDtypes) {
  Tensor x = tensor<float>({0.5f, -1.0f}).requires_grad_();
  Tensor h = tanh(x);
  Tensor y = (h * h + h * 3).sum();  // h used three times
  y.backward();
  auto xv = values_of(x);
  auto g = values_of(x.grad());
  for (size_t i = 0; i < 2; ++i) {
    const double t = std::tanh(xv[i]);
    EXPECT_NEAR(g[i], (2 * t + 3) * (1 - t * t), 1e-6);
  }
  // A float32 leaf used in a float64 computation gets a float32 gradient.
  Tensor w = tensor<float>({2.0f}).requires_grad_();
  (w * tensor<double>({3.0})).sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(values_of(w.grad()), (std::vector<double>{3}));
}

TEST(Autograd, GradWithoutTouchingDotGradAndHigherOrder) {
  Tensor x = tensor<double>({1.5, -2.0}).requires_grad_();
  Tensor y = (x * x * x).sum();
  auto g = autograd::grad({y}, {x}, {}, false, /*create_graph=*/true);
  EXPECT_TRUE(all_close(g[0], {3 * 1.5 * 1.5, 3 * 4.0}, 1e-12, 0));
  EXPECT_FALSE(x.grad().defined());
  auto gg = autograd::grad({g[0].sum()}, {x});
  EXPECT_TRUE(all_close(gg[0], {6 * 1.5, -12.0}, 1e-12, 0));
  // Through a saved output (tanh saves its result): d2/dx2 tanh = -2 tanh (1 - tanh^2).
  Tensor t = tensor<double>({0.3}).requires_grad_();
  auto dt = autograd::grad({tanh(t).sum()}, {t}, {}, false, true);
  auto d2 = autograd::grad({dt[0].sum()}, {t});
  const double th = std::tanh(0.3);
  EXPECT_NEAR(d2[0].item<double>(), -2 * th * (1 - th * th), 1e-12);
  Tensor unused = tensor<double>({1.0}).requires_grad_();
  EXPECT_THROW_MSG(autograd::grad({(x * 2).sum()}, {unused}), ValueError, "was not used");
  auto none = autograd::grad({(x * 2).sum()}, {unused}, {}, false, false, true);
  EXPECT_FALSE(none[0].defined());
}

TEST(Autograd, GradModeGuards) {
  Tensor x = tensor<double>({1.0}).requires_grad_();
  {
    NoGradGuard guard;
    EXPECT_FALSE(is_grad_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    {
      EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    x.mul_(3);  // in-place on a leaf is fine without grad mode (optimizer updates)
  }
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_EQ(x.item<double>(), 3.0);
  EXPECT_FALSE(x.detach().requires_grad());
  EXPECT_TRUE(x.detach().is_same_storage(x));
  EXPECT_THROW_MSG(x.mul_(2), ValueError, "[mul_] a leaf tensor that requires grad cannot be modified in place");
}

TEST(Autograd, InPlaceOnNonLeafKeepsCorrectGradients) {
  Tensor x = tensor<double>({1, 2, 3}).requires_grad_();
  Tensor y = x * 2;
  y.add_(1);
  y.mul_(x);  // y = (2x + 1) x  ->  dy/dx = 4x + 1
  y.exp_();   // y = exp((2x + 1) x)
  y.sum().backward();
  auto xv = values_of(x);
  std::vector<double> expected;
  for (double v : xv) expected.push_back(std::exp((2 * v + 1) * v) * (4 * v + 1));
  EXPECT_TRUE(all_close(x.grad(), expected, 1e-12, 0));
  Tensor v = (x * 1).narrow(0, 0, 2);
  EXPECT_THROW_MSG(v.add_(1), NotImplementedError, "view of a tensor that requires grad");
}

TEST(Autograd, VersionCounterProtectsSavedTensors) {
  Tensor x = tensor<double>({1, 2}).requires_grad_();
  Tensor h = x * 3;
  Tensor y = exp(h);       // exp saves its output
  Tensor z = (h * h).sum();  // mul saves h
  const uint64_t v = h.version();
  { NoGradGuard g; h.add_(1); }
  EXPECT_EQ(h.version(), v + 1);
  EXPECT_THROW_MSG(z.backward(), ValueError, "a tensor saved by mul for its gradient was modified by an in-place operation");
  { NoGradGuard g; y.zero_(); }
  EXPECT_THROW_MSG(y.sum().backward(), ValueError, "saved by exp");
}

TEST(Autograd, HooksAndRetainGrad) {
  Tensor x = tensor<double>({1, 2}).requires_grad_();
  int post_calls = 0;
  autograd::register_post_accumulate_grad_hook(x, [&](Tensor& leaf) {
    ++post_calls;
    EXPECT_TRUE(leaf.grad().defined());
  });
  x.register_hook([](const Tensor& g) { return g * 10; });
  Tensor h = x * x;
  h.retain_grad();
  int64_t id = h.register_hook([](const Tensor& g) { return g + 1; });
  h.sum().backward();
  EXPECT_EQ(post_calls, 1);
  EXPECT_EQ(values_of(h.grad()), (std::vector<double>{2, 2}));       // after its hook (+1)
  EXPECT_EQ(values_of(x.grad()), (std::vector<double>{40, 80}));     // 2 * 2x * 10
  h.remove_hook(id);
  EXPECT_THROW_MSG(tensor<double>({1.0}).register_hook([](const Tensor& g) { return g; }), ValueError, "does not require grad");
}
