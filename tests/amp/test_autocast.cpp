// amp::autocast: the guard's nesting, the result dtype of each listed op, bf16 products and
// convolutions against float64 computed on the bf16-rounded inputs, gradient dtypes and
// values through the casts, and a short MLP training under bf16 ending near float32's loss.
#include <cmath>

#include "support/test_support.h"

namespace ignis {
namespace {

using testing::all_close;
using testing::random_tensor;
using testing::random_values;
using testing::round_to;
using testing::values_of;
using Vec = std::vector<double>;
namespace F = nn::functional;

Tensor f32(const Shape& s, uint64_t seed) { return random_tensor(s, -1, 1, seed).to(kFloat32); }

TEST(Autocast, GuardNestsAndRestores) {
  EXPECT_FALSE(amp::is_autocast_enabled());
  {
    amp::autocast outer(kBFloat16);
    EXPECT_TRUE(amp::is_autocast_enabled());
    EXPECT_EQ(amp::autocast_dtype(), kBFloat16);
    {
      amp::autocast inner(kFloat16);
      EXPECT_EQ(amp::autocast_dtype(), kFloat16);
      {
        amp::autocast off(kFloat16, /*enabled=*/false);
        EXPECT_FALSE(amp::is_autocast_enabled());
        EXPECT_EQ(mm(f32({2, 3}, 1), f32({3, 2}, 2)).dtype(), kFloat32);
      }
      EXPECT_TRUE(amp::is_autocast_enabled());
      EXPECT_EQ(mm(f32({2, 3}, 1), f32({3, 2}, 2)).dtype(), kFloat16);
    }
    EXPECT_EQ(amp::autocast_dtype(), kBFloat16);
  }
  EXPECT_FALSE(amp::is_autocast_enabled());
  EXPECT_THROW_MSG(amp::autocast bad(kFloat64), DTypeError, "[autocast]");
}

TEST(Autocast, LowPrecisionOps) {
  const Tensor x = f32({4, 8}, 1), w = f32({5, 8}, 2), b = f32({5}, 3);
  const Tensor img = f32({2, 3, 6, 6}, 4), cw = f32({4, 3, 3, 3}, 5);
  amp::autocast ac(kBFloat16);
  EXPECT_EQ(mm(x, w.t()).dtype(), kBFloat16);
  EXPECT_EQ(matmul(x, w.t()).dtype(), kBFloat16);
  EXPECT_EQ(bmm(x.unsqueeze(0), w.t().unsqueeze(0)).dtype(), kBFloat16);
  EXPECT_EQ(addmm(b, x, w.t()).dtype(), kBFloat16);
  EXPECT_EQ(baddbmm(b.view({1, 1, 5}), x.unsqueeze(0), w.t().unsqueeze(0)).dtype(), kBFloat16);
  EXPECT_EQ(F::linear(x, w, b).dtype(), kBFloat16);
  EXPECT_EQ(F::linear(x.unsqueeze(0), w, b).dtype(), kBFloat16);  // the matmul path
  EXPECT_EQ(conv2d(img, cw).dtype(), kBFloat16);
  EXPECT_EQ(conv_transpose2d(img, cw.transpose(0, 1)).dtype(), kBFloat16);
  // Mixed inputs are cast too (without autocast mm refuses them).
  EXPECT_EQ(mm(x.to(kBFloat16), w.t()).dtype(), kBFloat16);
  // float64 is never cast.
  EXPECT_EQ(mm(x.to(kFloat64), w.t().to(kFloat64)).dtype(), kFloat64);
}

TEST(Autocast, Float32Ops) {
  const Tensor xb = f32({4, 5}, 1).to(kBFloat16);
  const Tensor pos = (f32({4, 5}, 2).abs() + 0.1).to(kBFloat16);
  const Tensor target = tensor<int64_t>({0, 3, 1, 4});
  amp::autocast ac(kBFloat16);
  for (const Tensor& r :
       {softmax(xb, 1),
        log_softmax(xb, 1),
        cumsum(xb, 1),
        sum(xb),
        prod(xb),
        norm(xb),
        logsumexp(xb, {1}),
        exp(xb),
        log(pos),
        log1p(pos),
        expm1(xb),
        rsqrt(pos),
        pow(pos, 2.0),
        pow(pos, pos),
        softplus(xb),
        F::cross_entropy(xb, target),
        F::nll_loss(xb, target),
        F::mse_loss(xb, pos),
        F::l1_loss(xb, pos),
        F::smooth_l1_loss(xb, pos),
        F::binary_cross_entropy_with_logits(xb, sigmoid(pos)),
        layer_norm(xb, {5}, Tensor(), Tensor()),
        group_norm(xb.view({4, 5, 1}), 1)})
    EXPECT_EQ(r.dtype(), kFloat32)
        << "an op of the float32 list returned " << dtype_name(r.dtype());
}

TEST(Autocast, OtherOpsKeepOrWidenTheirInputs) {
  const Tensor xb = f32({4, 5}, 1).to(kBFloat16), x = f32({4, 5}, 2);
  amp::autocast ac(kBFloat16);
  EXPECT_EQ(relu(xb).dtype(), kBFloat16);
  EXPECT_EQ(mean(xb).dtype(), kBFloat16);   // not on PyTorch's list
  EXPECT_EQ(add(xb, x).dtype(), kFloat32);  // the widest input
  EXPECT_EQ(cat({xb, x}, 0).dtype(), kFloat32);
  EXPECT_EQ(max_pool2d(xb.view({1, 1, 4, 5}), {.kernel_size = {2, 2}}).dtype(), kBFloat16);
  // Batch norm runs in its input's dtype with float32 parameters, as in PyTorch.
  EXPECT_EQ(batch_norm(xb, Tensor(), Tensor(), ones({5}), zeros({5}), true).dtype(), kBFloat16);
  EXPECT_EQ(batch_norm(x, Tensor(), Tensor(), ones({5}), zeros({5}), true).dtype(), kFloat32);
  EXPECT_EQ(batch_norm_relu(xb, Tensor(), Tensor(), ones({5}), zeros({5}), true, 0.1, 1e-5, xb)
                .dtype(),
            kBFloat16);
  // In-place ops are never cast.
  Tensor y = xb.clone();
  y.exp_();
  EXPECT_EQ(y.dtype(), kBFloat16);
}

// The exact expectation for a bf16 product: the float64 product of the bf16-rounded inputs,
// rounded once to bf16. Float accumulation may land one bf16 rounding step away from it.
void expect_bf16_product(
    const Tensor& got,
    const Vec& a,
    const Vec& b,
    int64_t m,
    int64_t k,
    int64_t n,
    const char* what) {
  ASSERT_EQ(got.dtype(), kBFloat16) << what;
  const Vec ar = round_to(a, kBFloat16), br = round_to(b, kBFloat16);
  Vec ref(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        ref[size_t(i * n + j)] += ar[size_t(i * k + p)] * br[size_t(p * n + j)];
  EXPECT_TRUE(all_close(got, round_to(ref, kBFloat16), 1.0 / 128, 1e-6)) << what;
}

TEST(Autocast, Bf16ProductsMatchFloat64OnRoundedInputs) {
  const int64_t m = 37, k = 70, n = 29;
  const Vec a = random_values(m * k, -1, 1, 11), b = random_values(k * n, -1, 1, 12);
  const Tensor ta = tensor(a, Shape{m, k}).to(kFloat32), tb = tensor(b, Shape{k, n}).to(kFloat32);
  amp::autocast ac(kBFloat16);
  expect_bf16_product(mm(ta, tb), a, b, m, k, n, "mm");
  // B as a transposed view (column-major), and a batch of 3 with a shared B.
  expect_bf16_product(mm(ta, tb.t().contiguous().t()), a, b, m, k, n, "mm, transposed B");
  Tensor batched = matmul(ta.unsqueeze(0).expand({3, m, k}).contiguous(), tb);
  for (int64_t i = 0; i < 3; ++i)
    expect_bf16_product(batched.select(0, i), a, b, m, k, n, "matmul 3-D @ 2-D");
  Tensor bm =
      bmm(ta.unsqueeze(0).expand({2, m, k}).contiguous(),
          tb.unsqueeze(0).expand({2, k, n}).contiguous());
  expect_bf16_product(bm.select(0, 1), a, b, m, k, n, "bmm");
}

TEST(Autocast, Bf16AddmmAlphaBeta) {
  // addmm with beta and alpha straight in bf16: out = beta * c + alpha * a @ b, rounded once.
  const int64_t m = 9, k = 33, n = 17;
  const Vec a = random_values(m * k, -1, 1, 21), b = random_values(k * n, -1, 1, 22),
            c = random_values(m * n, -1, 1, 23);
  const Tensor ta = tensor(a, Shape{m, k}).to(kBFloat16), tb = tensor(b, Shape{k, n}).to(kBFloat16),
               tc = tensor(c, Shape{m, n}).to(kBFloat16);
  Tensor got = addmm(tc, ta, tb, 0.5, 2.0);
  const Vec ar = round_to(a, kBFloat16), br = round_to(b, kBFloat16), cr = round_to(c, kBFloat16);
  Vec ref(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += ar[size_t(i * k + p)] * br[size_t(p * n + j)];
      ref[size_t(i * n + j)] = 0.5 * cr[size_t(i * n + j)] + 2.0 * s;
    }
  EXPECT_TRUE(all_close(got, round_to(ref, kBFloat16), 1.0 / 128, 1e-6));
}

TEST(Autocast, Bf16ConvolutionMatchesFloat64OnRoundedInputs) {
  const Vec x = random_values(2 * 3 * 7 * 7, -1, 1, 31),
            w = random_values(4 * 3 * 3 * 3, -1, 1, 32);
  const Tensor tx = tensor(x, Shape{2, 3, 7, 7}).to(kFloat32),
               tw = tensor(w, Shape{4, 3, 3, 3}).to(kFloat32);
  Tensor got;
  {
    amp::autocast ac(kBFloat16);
    got = conv2d(tx, tw, Tensor(), {.padding = {1, 1}});
  }
  ASSERT_EQ(got.dtype(), kBFloat16);
  const Vec xr = round_to(x, kBFloat16), wr = round_to(w, kBFloat16);
  Vec ref(size_t(2 * 4 * 7 * 7), 0.0);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 4; ++o)
      for (int i = 0; i < 7; ++i)
        for (int j = 0; j < 7; ++j) {
          double s = 0;
          for (int c = 0; c < 3; ++c)
            for (int di = 0; di < 3; ++di)
              for (int dj = 0; dj < 3; ++dj) {
                const int ii = i + di - 1, jj = j + dj - 1;
                if (ii < 0 || ii >= 7 || jj < 0 || jj >= 7) continue;
                s += xr[size_t(((n * 3 + c) * 7 + ii) * 7 + jj)] *
                     wr[size_t(((o * 3 + c) * 3 + di) * 3 + dj)];
              }
          ref[size_t(((n * 4 + o) * 7 + i) * 7 + j)] = s;
        }
  EXPECT_TRUE(all_close(got, round_to(ref, kBFloat16), 1.0 / 128, 1e-6));
}

TEST(Autocast, GradientsArriveInTheParametersDtype) {
  // y = x W^T + b in bf16, loss = sum(y) (float32 under autocast). dloss/dW[o, j] is the bf16
  // product ones^T x_bf16: the column sums of the bf16-rounded x, rounded to bf16.
  const int64_t batch = 6, in = 8, out = 3;
  const Vec xv = random_values(batch * in, -1, 1, 41);
  Tensor x = tensor(xv, Shape{batch, in}).to(kFloat32).requires_grad_();
  Tensor w = f32({out, in}, 42).requires_grad_(), b = f32({out}, 43).requires_grad_();
  Tensor loss;
  {
    amp::autocast ac(kBFloat16);
    Tensor y = F::linear(x, w, b);
    EXPECT_EQ(y.dtype(), kBFloat16);
    loss = y.sum();
    EXPECT_EQ(loss.dtype(), kFloat32);
  }
  loss.backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat32);
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  const Vec xr = round_to(xv, kBFloat16);
  Vec col(size_t(in), 0.0);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < in; ++j) col[size_t(j)] += xr[size_t(i * in + j)];
  const Vec colr = round_to(col, kBFloat16);
  Vec gw;
  for (int64_t o = 0; o < out; ++o) gw.insert(gw.end(), colr.begin(), colr.end());
  EXPECT_TRUE(all_close(w.grad(), gw, 1.0 / 128, 1e-6));
  EXPECT_TRUE(all_close(b.grad(), Vec(size_t(out), double(batch)), 0, 0));
  // dloss/dx[i, j] = sum_o W[o, j] (bf16-rounded), rounded to bf16.
  const Vec wr = round_to(values_of(w), kBFloat16);
  Vec gx;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < in; ++j) {
      double s = 0;
      for (int64_t o = 0; o < out; ++o) s += wr[size_t(o * in + j)];
      gx.push_back(s);
    }
  EXPECT_TRUE(all_close(x.grad(), round_to(gx, kBFloat16), 1.0 / 128, 1e-6));
}

TEST(Autocast, BatchNormUpdatesItsRunningStatisticsInPlace) {
  // Running statistics are buffers updated in place: autocast must not replace them by
  // copies. Expected after one training step (momentum 0.1, starting at 0 and 1): 0.1 * the
  // batch mean and 0.9 + 0.1 * the unbiased batch variance, per channel.
  const Vec xv = random_values(4 * 3, -1, 1, 71);
  Vec mean(3, 0.0), var(3, 0.0);
  for (int c = 0; c < 3; ++c) {
    for (int n = 0; n < 4; ++n)
      mean[size_t(c)] += double(BFloat16(float(xv[size_t(n * 3 + c)]))) / 4;
    for (int n = 0; n < 4; ++n) {
      const double d = double(BFloat16(float(xv[size_t(n * 3 + c)]))) - mean[size_t(c)];
      var[size_t(c)] += d * d / 3;
    }
  }
  for (DType stats : {kFloat32, kBFloat16}) {
    Tensor rm = zeros({3}, stats), rv = ones({3}, stats);
    const Tensor x = tensor(xv, Shape{4, 3}).to(kBFloat16);
    Tensor y;
    {
      amp::autocast ac(kBFloat16);
      y = batch_norm(x, rm, rv, ones({3}, stats), zeros({3}, stats), true);
    }
    EXPECT_EQ(y.dtype(), kBFloat16);  // the input's dtype, whatever the statistics'
    EXPECT_EQ(rm.dtype(), stats);
    Vec want_m, want_v;
    for (int c = 0; c < 3; ++c) {
      want_m.push_back(0.1 * mean[size_t(c)]);
      want_v.push_back(0.9 + 0.1 * var[size_t(c)]);
    }
    const double tol = stats == kFloat32 ? 1e-6 : 1.0 / 128;
    EXPECT_TRUE(all_close(rm, want_m, tol, 1e-6)) << dtype_name(stats);
    EXPECT_TRUE(all_close(rv, want_v, tol, 1e-6)) << dtype_name(stats);
  }
}

TEST(Autocast, BackwardInsideTheScopeCastsNothingAgain) {
  // A float32 product recorded outside autocast, differentiated inside it: its gradient
  // stays float32 (and exact), not recomputed in bf16.
  const Vec av = random_values(6, -1, 1, 61), bv = random_values(6, -1, 1, 62);
  Tensor a = tensor(av, Shape{2, 3}).to(kFloat32).requires_grad_();
  Tensor b = tensor(bv, Shape{3, 2}).to(kFloat32);
  Tensor y = mm(a, b).sum();
  {
    amp::autocast ac(kBFloat16);
    y.backward();
  }
  ASSERT_EQ(a.grad().dtype(), kFloat32);
  Vec expect;  // dy/da[i, p] = sum_j b[p, j]
  for (int i = 0; i < 2; ++i)
    for (int p = 0; p < 3; ++p)
      expect.push_back(double(float(bv[size_t(p * 2)])) + double(float(bv[size_t(p * 2 + 1)])));
  EXPECT_TRUE(all_close(a.grad(), expect, 1e-6, 0));
}

struct Mlp : nn::Module {
  nn::Linear fc1{this, "fc1", 10, 64};
  nn::Linear fc2{this, "fc2", 64, 4};
  Tensor forward(const Tensor& x) { return fc2.forward(relu(fc1.forward(x))); }
};

/// Final training loss of the MLP on a fixed classification task (labels from a random
/// linear teacher), full batch, plain SGD, with or without bf16 autocast.
double train_mlp(bool bf16, double* first_loss) {
  manual_seed(7);
  Mlp model;
  const Tensor x = f32({256, 10}, 51);
  const Tensor labels = argmax(matmul(x, f32({10, 4}, 52)), 1);
  optim::SGD opt(model.parameters(), {.lr = 0.5, .momentum = 0.9});
  double loss_value = 0;
  for (int step = 0; step < 150; ++step) {
    Tensor loss;
    {
      amp::autocast ac(kBFloat16, bf16);
      loss = F::cross_entropy(model.forward(x), labels);
    }
    EXPECT_EQ(loss.dtype(), kFloat32);
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss_value = loss.item<double>();
    if (step == 0) *first_loss = loss_value;
  }
  for (const Tensor& p : model.parameters()) EXPECT_EQ(p.dtype(), kFloat32);
  return loss_value;
}

TEST(Autocast, MlpTrainingUnderBf16EndsNearFloat32) {
  double first32 = 0, first16 = 0;
  const double loss32 = train_mlp(false, &first32);
  const double loss16 = train_mlp(true, &first16);
  EXPECT_NEAR(first16, first32, 0.02 * first32);  // same initial weights
  EXPECT_LT(loss32, 0.3 * first32) << "float32 training did not learn";
  EXPECT_NEAR(loss16, loss32, 0.1 * first32) << "bf16 " << loss16 << " vs float32 " << loss32;
}

}  // namespace
}  // namespace ignis
