// The fused batch-norm epilogues. batch_norm_relu (batch norm + ReLU, and batch norm +
// residual add + ReLU): gradcheck in float64 (training and eval, NCHW and channels-last, with
// and without a residual), the same values, running statistics and gradients as the unfused
// composition relu(add(batch_norm(...), residual)), BatchNorm::forward_relu against the
// module's own forward, ResNet's blocks against their unfused formula, and the error
// messages. batch_norm_gelu: gradcheck in float64, the values, running statistics and
// gradients of gelu(batch_norm(...)) in float64, float32, bfloat16 and float16 (with and
// without weight and bias), and BatchNorm::forward_gelu against forward then gelu (with
// forward_relu's module test).
#include "nn/nn_test_helpers.h"

namespace ignis {
namespace {

using namespace ignis::testing;

Tensor channels_last(const Tensor& t) { return t.contiguous(MemoryFormat::channels_last); }

struct Case {
  bool training, cl, residual, affine = true;
  std::string name() const {
    return std::string(training ? "train" : "eval") + (cl ? " channels-last" : " nchw") +
           (residual ? " + residual" : "") + (affine ? "" : " no affine");
  }
};
/// batch_norm_relu's cases: with and without a residual.
std::vector<Case> all_cases() {
  std::vector<Case> r;
  for (bool training : {true, false})
    for (bool cl : {false, true})
      for (bool residual : {false, true}) r.push_back({training, cl, residual});
  return r;
}
/// batch_norm_gelu's cases: with and without weight and bias.
std::vector<Case> gelu_cases() {
  std::vector<Case> r;
  for (bool training : {true, false})
    for (bool cl : {false, true})
      for (bool affine : {true, false}) r.push_back({training, cl, false, affine});
  return r;
}

TEST(BatchNormRelu, GradcheckInFloat64) {
  const Tensor x = random_tensor({3, 4, 5, 3}, -2, 2, 1), w = random_tensor({4}, 0.5, 1.5, 2),
               b = random_tensor({4}, -0.5, 0.5, 3), r = random_tensor({3, 4, 5, 3}, -1, 1, 4);
  const Tensor rm = random_tensor({4}, -0.5, 0.5, 5), rv = random_tensor({4}, 0.5, 2, 6);
  for (const Case& k : all_cases()) {
    std::vector<Tensor> inputs{x, w, b};
    if (k.residual) inputs.push_back(r);
    // Training takes no running statistics here: gradcheck calls fn many times.
    const Tensor mean = k.training ? Tensor() : rm, var = k.training ? Tensor() : rv;
    expect_gradcheck("batch_norm_relu " + k.name(), [k, mean, var](const std::vector<Tensor>& v) {
      const Tensor in = k.cl ? channels_last(v[0]) : v[0];
      const Tensor res = k.residual ? (k.cl ? channels_last(v[3]) : v[3]) : Tensor();
      return batch_norm_relu(in, mean, var, v[1], v[2], k.training, 0.1, 1e-5, res);
    }, inputs);
  }
}

/// Output, running statistics and the gradients of x, weight, bias and residual for
/// sum(out * up), either fused or composed from batch_norm, add and relu.
struct Outcome {
  Tensor out, rm, rv;
  std::vector<Tensor> grads;
};
Outcome run_case(const Case& k, DType dtype, bool fused) {
  const Shape shape{4, 6, 5, 7};
  auto leaf = [&](const Tensor& t, bool layout) {
    Tensor l = t.to(dtype);
    if (layout && k.cl) l = channels_last(l);
    return l.detach().requires_grad_();
  };
  std::vector<Tensor> v{leaf(random_tensor(shape, -2, 2, 11), true),
                        leaf(random_tensor({6}, 0.5, 1.5, 12), false),
                        leaf(random_tensor({6}, -0.5, 0.5, 13), false)};
  if (k.residual) v.push_back(leaf(random_tensor(shape, -1, 1, 14), true));
  Tensor rm = random_tensor({6}, -0.5, 0.5, 15).to(dtype), rv = random_tensor({6}, 0.5, 2, 16).to(dtype);
  const Tensor res = k.residual ? v[3] : Tensor();
  Tensor out;
  if (fused) {
    out = batch_norm_relu(v[0], rm, rv, v[1], v[2], k.training, 0.2, 1e-4, res);
  } else {
    out = batch_norm(v[0], rm, rv, v[1], v[2], k.training, 0.2, 1e-4);
    out = relu(k.residual ? add(out, res) : out);
  }
  (out * random_tensor(shape, -1, 1, 17).to(dtype)).sum().backward();
  Outcome r{out.detach(), rm, rv, {}};
  for (const Tensor& t : v) r.grads.push_back(t.grad());
  return r;
}

TEST(BatchNormRelu, EqualsTheUnfusedComposition) {
  for (DType dtype : {kFloat32, kFloat64})
    for (const Case& k : all_cases()) {
      SCOPED_TRACE(k.name() + " " + dtype_name(dtype));
      const Outcome fused = run_case(k, dtype, true), plain = run_case(k, dtype, false);
      EXPECT_EQ(detail::is_channels_last(fused.out), k.cl);
      // The forward rounds the same operations in the same order: equal bit for bit.
      EXPECT_TRUE(all_close(fused.out, values_of(plain.out), 0, 0));
      EXPECT_TRUE(all_close(fused.rm, values_of(plain.rm), 0, 0));
      EXPECT_TRUE(all_close(fused.rv, values_of(plain.rv), 0, 0));
      // The backward sums the masked gradient inside the reductions instead of reading a
      // masked copy: the same sums, up to the order a vectorised loop adds them in.
      const double tol = dtype == kFloat64 ? 1e-12 : 1e-6;
      ASSERT_EQ(fused.grads.size(), plain.grads.size());
      for (size_t i = 0; i < fused.grads.size(); ++i) {
        ASSERT_TRUE(fused.grads[i].defined()) << "input " << i;
        EXPECT_TRUE(all_close(fused.grads[i], values_of(plain.grads[i]), tol, tol)) << "input " << i;
      }
    }
}

// BatchNorm::forward_relu and forward_gelu against the module's forward and the activation:
// the same values and the same state (running statistics, num_batches_tracked) after it.
TEST(BatchNormRelu, ModuleFusedForwardsMatchForwardThenActivation) {
  for (bool track : {true, false})
    for (bool affine : {true, false})
      for (bool training : {true, false}) {
        SCOPED_TRACE(fmt::format("track {} affine {} training {}", track, affine, training));
        const nn::BatchNormConfig config{.momentum = 0.3, .affine = affine, .track_running_stats = track};
        nn::BatchNorm2d fused_bn(5, config), plain_bn(5, config), gelu_bn(5, config),
            gelu_plain_bn(5, config);
        const std::vector<nn::BatchNorm2d*> all{&fused_bn, &plain_bn, &gelu_bn, &gelu_plain_bn};
        if (affine) {
          NoGradGuard no_grad;
          for (nn::BatchNorm2d* bn : all) {
            bn->weight.copy_(random_tensor({5}, 0.5, 1.5, 21));
            bn->bias.copy_(random_tensor({5}, -0.5, 0.5, 22));
          }
        }
        for (nn::BatchNorm2d* bn : all) bn->train(training);
        for (int step = 0; step < 2; ++step) {
          const Tensor x = channels_last(random_tensor({3, 5, 4, 4}, -2, 2, 23 + step).to(kFloat32));
          const Tensor r = channels_last(random_tensor({3, 5, 4, 4}, -1, 1, 25 + step).to(kFloat32));
          EXPECT_TRUE(all_close(fused_bn.forward_relu(x), values_of(relu(plain_bn(x))), 0, 0));
          EXPECT_TRUE(all_close(fused_bn.forward_relu(x, r), values_of(relu(add(plain_bn(x), r))), 0, 0));
          EXPECT_TRUE(all_close(gelu_bn.forward_gelu(x), values_of(gelu(gelu_plain_bn(x))), 0, 0));
        }
        for (const auto& [name, t] : plain_bn.state_dict())
          EXPECT_TRUE(all_close(fused_bn.state_dict().at(name), values_of(t), 0, 0)) << name;
        for (const auto& [name, t] : gelu_plain_bn.state_dict())
          EXPECT_TRUE(all_close(gelu_bn.state_dict().at(name), values_of(t), 0, 0)) << "gelu " << name;
      }
}

TEST(BatchNormRelu, ResNetBlocksMatchTheirUnfusedFormula) {
  // A downsampling BasicBlock and a Bottleneck with identity shortcut, in training mode.
  models::BasicBlock basic(8, 16, 2);
  models::Bottleneck bottleneck(16, 4, 1);
  const Tensor x = channels_last(random_tensor({2, 8, 6, 6}, -1, 1, 31).to(kFloat32));
  Tensor y, expect;
  {
    NoGradGuard no_grad;
    // The expected values first, with the same modules: batch statistics do not depend on the
    // running ones, so the second call normalises the same way.
    Tensor out = relu(basic.bn1(basic.conv1(x)));
    out = basic.bn2(basic.conv2(out));
    expect = relu(add(out, (*basic.downsample)(x)));
    y = basic(x);
  }
  EXPECT_TRUE(all_close(y, values_of(expect), 1e-6, 1e-6));
  {
    NoGradGuard no_grad;
    Tensor out = relu(bottleneck.bn1(bottleneck.conv1(expect)));
    out = relu(bottleneck.bn2(bottleneck.conv2(out)));
    const Tensor e2 = relu(add(bottleneck.bn3(bottleneck.conv3(out)), expect));
    EXPECT_TRUE(all_close(bottleneck(expect), values_of(e2), 1e-6, 1e-6));
  }
}

TEST(BatchNormRelu, ResidualOfAnotherShapeOrDtype) {
  const Tensor x = random_tensor({2, 3, 4, 4}, -1, 1, 41).to(kFloat32);
  EXPECT_THROW_MSG(batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5,
                                   zeros({2, 3, 4, 5})),
                   ShapeError,
                   "[batch_norm_add_relu] expected a residual of the input's shape [2, 3, 4, 4], "
                   "got [2, 3, 4, 5]");
  // Another dtype promotes as add does: the composition's float64 result.
  const Tensor r = random_tensor({2, 3, 4, 4}, -1, 1, 42);
  const Tensor y = batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, r);
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_TRUE(all_close(y, values_of(relu(add(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true), r))), 0, 0));
}

TEST(BatchNormGelu, GradcheckInFloat64) {
  const Tensor x = random_tensor({3, 4, 5, 3}, -2, 2, 1), w = random_tensor({4}, 0.5, 1.5, 2),
               b = random_tensor({4}, -0.5, 0.5, 3);
  const Tensor rm = random_tensor({4}, -0.5, 0.5, 5), rv = random_tensor({4}, 0.5, 2, 6);
  for (const Case& k : gelu_cases()) {
    if (!k.affine) continue;
    // Training takes no running statistics here: gradcheck calls fn many times.
    const Tensor mean = k.training ? Tensor() : rm, var = k.training ? Tensor() : rv;
    expect_gradcheck("batch_norm_gelu " + k.name(), [k, mean, var](const std::vector<Tensor>& v) {
      const Tensor in = k.cl ? channels_last(v[0]) : v[0];
      return batch_norm_gelu(in, mean, var, v[1], v[2], k.training, 0.1, 1e-5);
    }, {x, w, b});
  }
}

/// Output, running statistics and the gradients of x, weight and bias for sum(out * up),
/// either fused or composed from batch_norm and gelu.
Outcome run_gelu_case(const Case& k, DType dtype, bool fused) {
  const Shape shape{4, 6, 5, 7};
  auto leaf = [&](const Tensor& t, DType d, bool layout) {
    Tensor l = t.to(d);
    if (layout && k.cl) l = channels_last(l);
    return l.detach().requires_grad_();
  };
  // 16-bit inputs take float32 parameters and statistics (Note [Batch norm on 16-bit inputs]).
  const DType pd = dtype == kFloat64 ? kFloat64 : kFloat32;
  std::vector<Tensor> v{leaf(random_tensor(shape, -3, 3, 11), dtype, true)};
  if (k.affine) {
    v.push_back(leaf(random_tensor({6}, 0.5, 1.5, 12), pd, false));
    v.push_back(leaf(random_tensor({6}, -0.5, 0.5, 13), pd, false));
  }
  const Tensor w = k.affine ? v[1] : Tensor(), b = k.affine ? v[2] : Tensor();
  Tensor rm = random_tensor({6}, -0.5, 0.5, 15).to(pd), rv = random_tensor({6}, 0.5, 2, 16).to(pd);
  const Tensor out = fused ? batch_norm_gelu(v[0], rm, rv, w, b, k.training, 0.2, 1e-4)
                           : gelu(batch_norm(v[0], rm, rv, w, b, k.training, 0.2, 1e-4));
  (out * random_tensor(shape, -1, 1, 17).to(dtype)).sum().backward();
  Outcome r{out.detach(), rm, rv, {}};
  for (const Tensor& t : v) r.grads.push_back(t.grad());
  return r;
}

TEST(BatchNormGelu, EqualsTheUnfusedComposition) {
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16})
    for (const Case& k : gelu_cases()) {
      SCOPED_TRACE(k.name() + " " + dtype_name(dtype));
      const Outcome fused = run_gelu_case(k, dtype, true), plain = run_gelu_case(k, dtype, false);
      EXPECT_EQ(fused.out.dtype(), dtype);
      EXPECT_EQ(detail::is_channels_last(fused.out), k.cl);
      // The forward computes the normalised value and gelu of it as the two ops do (a 16-bit
      // normalised value rounded before gelu, as batch_norm stores it): equal bit for bit.
      EXPECT_TRUE(all_close(fused.out, values_of(plain.out), 0, 0));
      EXPECT_TRUE(all_close(fused.rm, values_of(plain.rm), 0, 0));
      EXPECT_TRUE(all_close(fused.rv, values_of(plain.rv), 0, 0));
      // The backward recomputes the normalised value and sums the gradient through gelu
      // inside the reductions instead of reading gelu's stored gradient: the same terms, up to
      // the order a vectorised loop adds them in (and, in 16 bits, a rounding of the input
      // gradient that this order can tip).
      const double tol = dtype == kFloat64   ? 1e-12
                         : dtype == kFloat32 ? 1e-6
                         : dtype == kBFloat16 ? 1.0 / 128
                                              : 1.0 / 1024;
      ASSERT_EQ(fused.grads.size(), plain.grads.size());
      for (size_t i = 0; i < fused.grads.size(); ++i) {
        ASSERT_TRUE(fused.grads[i].defined()) << "input " << i;
        const double t = i == 0 ? tol : std::max(tol * 1e-2, dtype == kFloat64 ? 1e-12 : 1e-6);
        EXPECT_TRUE(all_close(fused.grads[i], values_of(plain.grads[i]), t, t)) << "input " << i;
      }
    }
}

}  // namespace
}  // namespace ignis
