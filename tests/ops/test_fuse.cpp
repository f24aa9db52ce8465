// Fused elementwise functions (include/ignis/fuse.h): values against float64 loops and
// against the same function run op by op on tensors, over broadcasting, layouts, dtypes and
// the threaded path; gradients against eager autograd and finite differences; errors.
#include <cmath>

#include "ignis/fuse.h"
#include "ops/fuse_cases.h"
#include "ops/fuse_program.h"
#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace {

// The chain of bench/core_ops.cpp's small_chain row, written once for tensors and traces.
const auto chain = [](auto x, auto y) {
  auto t = x * y;
  t = t + y;
  t = relu(t);
  t = t * 0.5;
  t = t + 1.0;
  t = neg(t);
  t = abs(t);
  t = t - y;
  t = maximum(t, y);
  return clamp(t, -1.0, 1.0);
};

double chain_ref(double x, double y) {
  double t = std::max(x * y + y, 0.0) * 0.5 + 1.0;
  t = std::fabs(-t) - y;
  t = std::max(t, y);
  return std::min(std::max(t, -1.0), 1.0);
}

const auto& every_op = ignis::testing::every_fused_op;

Tensor as_f32(const Tensor& t) { return t.to(kFloat32); }

}  // namespace

TEST(Fuse, ChainMatchesTheOpsAndAFloat64Loop) {
  const auto fused = fuse(chain, "chain");
  const Tensor x = as_f32(random_tensor({64, 512}, -2, 2, 1));
  const Tensor y = as_f32(random_tensor({64, 512}, -1, 1, 2));
  const Tensor out = fused(x, y);
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_EQ(out.sizes(), Shape({64, 512}));
  // The same functors in the same float arithmetic: the same bits as the ops one by one.
  EXPECT_TRUE(equal(out, chain(x, y)));
  const std::vector<double> xs = values_of(x), ys = values_of(y);
  std::vector<double> expected(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) expected[i] = chain_ref(xs[i], ys[i]);
  EXPECT_TRUE(all_close(out, expected, 1e-6, 1e-6));
}

TEST(Fuse, EveryOpMatchesTheOpsInEveryLayoutAndOnTheOpByOpPath) {
  const auto fused = fuse(every_op, "every_op");
  for (Layout layout : kAllLayouts) {
    SCOPED_TRACE(layout_name(layout));
    for (DType dt : {kFloat32, kFloat64}) {
      const Tensor x = make_input(random_values(3 * 1037, 0.2, 2, 3), {3, 1037}, dt, layout);
      const Tensor y = make_input(random_values(3 * 1037, -1.5, 1.5, 4), {3, 1037}, dt, layout);
      const Tensor out = fused(x, y);
      EXPECT_EQ(out.dtype(), dt);
      const Tensor ops = every_op(x, y);
      // Constants fold in double ((2 - |y|) / 3 keeps its order; nothing else differs).
      EXPECT_TRUE(all_close(out, values_of(ops), dt == kFloat32 ? 2e-6 : 1e-14, 1e-6));
      // The op-by-op path (devices without the fused kernel) gives the same values.
      const auto trace = detail::begin_fused_trace(2, "every_op");
      const auto program = detail::end_fused_trace(
          *trace, {every_op(detail::fused_input(*trace, 0), detail::fused_input(*trace, 1))});
      const std::vector<Tensor> slow = detail::run_fused_op_by_op(*program, {x, y});
      EXPECT_EQ(slow[0].dtype(), dt);
      EXPECT_TRUE(equal(slow[0], out));
    }
  }
}

TEST(Fuse, BroadcastingScalarsLayoutsAndEmptyTensors) {
  const auto f = fuse([](auto a, auto b, auto c) { return (a - b) * c + exp(b); }, "bcast");
  const auto ref = [](double a, double b, double c) { return (a - b) * c + std::exp(b); };
  // [4, 1, 5] transposed view, [3, 5], a 0-dim tensor: result [4, 3, 5].
  const Tensor a = random_tensor({5, 1, 4}, -1, 1, 5).permute({2, 1, 0});
  const Tensor b = random_tensor({3, 5}, -1, 1, 6);
  const Tensor c = random_tensor({}, 1, 2, 7);
  const Tensor out = f(a, b, c);
  ASSERT_EQ(out.sizes(), Shape({4, 3, 5}));
  const std::vector<double> av = values_of(a), bv = values_of(b), cv = values_of(c);
  std::vector<double> expected;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 5; ++k)
        expected.push_back(ref(av[size_t(i * 5 + k)], bv[size_t(j * 5 + k)], cv[0]));
  EXPECT_TRUE(all_close(out, expected, 1e-14, 1e-14));

  // A channels-last input gives a channels-last result.
  const Tensor n = as_f32(random_tensor({2, 3, 4, 5}, -1, 1, 8)).contiguous(MemoryFormat::channels_last);
  const Tensor bias = as_f32(random_tensor({3, 1, 1}, -1, 1, 9));
  const Tensor one = ones({}, {kFloat32});
  const Tensor cl = f(n, bias, one);
  EXPECT_TRUE(cl.is_contiguous(MemoryFormat::channels_last));
  EXPECT_TRUE(equal(cl, (n - bias) * one + exp(bias)));

  // Empty: the broadcast empty shape, nothing run.
  const Tensor e = f(zeros({0, 5}), zeros({5}), one);
  EXPECT_EQ(e.sizes(), Shape({0, 5}));
}

TEST(Fuse, DtypesPromoteAndSixteenBitInputsComputeInFloat) {
  const auto f = fuse([](auto x, auto y) { return sigmoid(x) * y + 0.1; }, "mix");
  const std::vector<double> xv = random_values(2000, -3, 3, 10), yv = random_values(2000, -1, 1, 11);
  std::vector<double> expected(xv.size());
  for (DType dt : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = make_input(xv, {2000}, dt), y = make_input(yv, {2000}, dt);
    const std::vector<double> xr = values_of(x), yr = values_of(y);
    for (size_t i = 0; i < xr.size(); ++i) expected[i] = 1 / (1 + std::exp(-xr[i])) * yr[i] + 0.1;
    const Tensor out = f(x, y);
    EXPECT_EQ(out.dtype(), dt);
    // One rounding, at the store: within half a unit of the last place of the exact value.
    EXPECT_TRUE(all_close(out, expected, dt == kBFloat16 ? 4e-3 : 1e-3, 1e-6));
  }
  // Integer inputs compute in the default float dtype; float32 with float64 gives float64.
  const Tensor i = arange(10);
  const Tensor r = f(i, i);
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_TRUE(equal(r, sigmoid(i.to(kFloat32)) * i.to(kFloat32) + 0.1));
  EXPECT_EQ(f(i.to(kFloat32), i.to(kFloat64)).dtype(), kFloat64);
}

TEST(Fuse, LargeTensorsSplitAcrossThreadsAndBlocks) {
  const auto fused = fuse(chain, "chain");
  // 1M + 3 elements: several threads' chunks, a block that does not fill 512 at the end.
  const Tensor x = as_f32(random_tensor({1000003}, -2, 2, 12));
  const Tensor y = as_f32(random_tensor({1000003}, -1, 1, 13));
  EXPECT_TRUE(equal(fused(x, y), chain(x, y)));
  // A broadcast row over short rows (the inner run shorter than a block).
  const Tensor a = as_f32(random_tensor({5000, 7}, -2, 2, 14));
  const Tensor row = as_f32(random_tensor({7}, -1, 1, 15));
  EXPECT_TRUE(equal(fused(a, row), chain(a, row)));
}

TEST(Fuse, SeveralOutputsInOnePass) {
  const auto f = fuse([](auto x, auto y) { return std::make_tuple(x * y, relu(x - y), x); }, "three");
  const Tensor x = random_tensor({33, 17}, -1, 1, 16), y = random_tensor({17}, -1, 1, 17);
  const auto [p, r, same] = f(x, y);
  EXPECT_TRUE(equal(p, x * y));
  EXPECT_TRUE(equal(r, relu(x - y)));
  EXPECT_TRUE(equal(same, x));
  EXPECT_NE(same.data_ptr(), x.data_ptr());  // an output has storage of its own
}

TEST(Fuse, GradientsMatchEagerAutogradAndFiniteDifferences) {
  const auto fused = fuse(every_op, "every_op");
  for (DType dt : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    // y broadcasts over x's rows: its gradient is summed over them.
    const Tensor x0 = random_tensor({6, 41}, 0.2, 2, 18).to(dt);
    const Tensor y0 = random_tensor({41}, -1.5, 1.5, 19).to(dt);
    const Tensor w = random_tensor({6, 41}, -1, 1, 20).to(dt);
    Tensor x = x0.clone().requires_grad_(), y = y0.clone().requires_grad_();
    (fused(x, y) * w).sum().backward();
    Tensor xe = x0.clone().requires_grad_(), ye = y0.clone().requires_grad_();
    (every_op(xe, ye) * w).sum().backward();
    const double tol = dt == kFloat32 ? 2e-5 : 1e-12;
    EXPECT_TRUE(all_close(x.grad(), values_of(xe.grad()), tol, tol));
    EXPECT_TRUE(all_close(y.grad(), values_of(ye.grad()), tol, tol));
    EXPECT_EQ(y.grad().sizes(), Shape({41}));
  }
  expect_gradcheck("fused every_op",
                   [&](const std::vector<Tensor>& in) { return fused(in[0], in[1]); },
                   {random_tensor({3, 7}, 0.3, 1.9, 21), random_tensor({3, 7}, -1.4, 1.4, 22)});
}

TEST(Fuse, TiesAndKinksTakeTheOpsGradients) {
  // maximum's ties split in half, relu and clamp at their kinks, pow's base-0 rule, where.
  const auto f = fuse(
      [](auto x, auto y) {
        return maximum(x, y) + relu(x) + clamp(x, 0.0, 1.0) + pow(x, y) + where(x, y, x * 3.0);
      },
      "kinks");
  const Tensor x0 = make_input({0, 1, -1, 2, 0.5, 0}, {6}, kFloat64);
  const Tensor y0 = make_input({0, 1, 2, -2, 0.5, 3}, {6}, kFloat64);
  Tensor x = x0.clone().requires_grad_(), y = y0.clone().requires_grad_();
  f(x, y).sum().backward();
  Tensor xe = x0.clone().requires_grad_(), ye = y0.clone().requires_grad_();
  (maximum(xe, ye) + relu(xe) + clamp(xe, 0.0, 1.0) + pow(xe, ye) +
   where(ne(xe, 0.0), ye, xe * 3.0))
      .sum()
      .backward();
  EXPECT_TRUE(all_close(x.grad(), values_of(xe.grad()), 0, 0));
  EXPECT_TRUE(all_close(y.grad(), values_of(ye.grad()), 0, 0));
}

TEST(Fuse, SecondDerivativesThroughTheGradientProgram) {
  const auto f = fuse([](auto x, auto y) { return sin(x) * y * y + exp(x * y); }, "second");
  const Tensor x0 = random_tensor({5, 3}, -1, 1, 23), y0 = random_tensor({5, 3}, -1, 1, 24);
  const auto second = [&](bool use_fused) {
    Tensor x = x0.clone().requires_grad_(), y = y0.clone().requires_grad_();
    const Tensor out = use_fused ? f(x, y) : sin(x) * y * y + exp(x * y);
    const std::vector<Tensor> g = autograd::grad({out.sum()}, {x, y}, {}, true, true);
    (g[0] * g[1]).sum().backward();
    return std::make_pair(x.grad(), y.grad());
  };
  const auto [fx, fy] = second(true);
  const auto [ex, ey] = second(false);
  EXPECT_TRUE(all_close(fx, values_of(ex), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(fy, values_of(ey), 1e-12, 1e-12));
}

TEST(Fuse, ErrorsNameTheFunction) {
  const auto f = fuse([](auto x, auto y) { return x + y; }, "pair_sum");
  try {
    f(Tensor(), ones({2}));
    FAIL() << "an undefined input was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[pair_sum] input 0 is an undefined tensor"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(f(ones({2}), ones({3})), ShapeError);
  const auto bad = fuse([](auto x) { return gelu(x, "fast"); }, "bad_gelu");
  EXPECT_THROW(bad(ones({2})), ValueError);
  // A value of one trace used in another.
  const auto t1 = detail::begin_fused_trace(1, "one"), t2 = detail::begin_fused_trace(1, "two");
  EXPECT_THROW(detail::fused_input(*t1, 0) + detail::fused_input(*t2, 0), ValueError);
  EXPECT_THROW(detail::end_fused_trace(*t1, {detail::fused_input(*t2, 0)}), ValueError);
  // Nothing was cached from a failed trace: it fails again; and the failed traces left no
  // per-thread state behind, so a good function still traces and runs.
  EXPECT_THROW(bad(ones({2})), ValueError);
  EXPECT_TRUE(equal(f(ones({2}), ones({2})), full({2}, 2.0)));
}

TEST(Fuse, ManyInputsSecondDerivativesUnusedInputsAndSavedTensors) {
  // Five inputs and four outputs: the second derivative's program wants nine gradients.
  const auto f = fuse([](auto a, auto b, auto c, auto d, auto e) {
    return std::make_tuple(a * b, c * d, e * a, sin(b * c));
  }, "five");
  std::vector<Tensor> leaves;
  for (uint64_t i = 0; i < 5; ++i) leaves.push_back(random_tensor({4}, -1, 1, 30 + i));
  const auto second = [&](bool use_fused) {
    std::vector<Tensor> xs;
    for (const Tensor& l : leaves) xs.push_back(l.clone().requires_grad_());
    Tensor p, q, r, s;
    if (use_fused) {
      std::tie(p, q, r, s) = f(xs[0], xs[1], xs[2], xs[3], xs[4]);
    } else {
      p = xs[0] * xs[1], q = xs[2] * xs[3], r = xs[4] * xs[0], s = sin(xs[1] * xs[2]);
    }
    const Tensor loss = (p * p + q * q + r * s + s * s).sum();
    const std::vector<Tensor> g = autograd::grad({loss}, xs, {}, true, true);
    Tensor total = g[0].sum();
    for (size_t i = 1; i < g.size(); ++i) total = total + (g[i] * g[i]).sum();
    total.backward();
    std::vector<Tensor> out;
    for (const Tensor& x : xs) out.push_back(x.grad());
    return out;
  };
  const std::vector<Tensor> fused = second(true), eager = second(false);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_TRUE(all_close(fused[i], values_of(eager[i]), 1e-12, 1e-12)) << "input " << i;

  // An input no output depends on gets no gradient, as with the single ops.
  const auto g = fuse([](auto x, auto) { return x * 2.0; }, "ignores_y");
  Tensor x = ones({3}).requires_grad_(), y = ones({3}).requires_grad_();
  g(x, y).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {2, 2, 2}, 0, 0));
  EXPECT_FALSE(y.grad().defined());

  // Only what the gradient formulas read is saved: a sum saves nothing, so changing an input
  // after the call is allowed (as after x + y); a product saves both.
  const auto sum = fuse([](auto a, auto b) { return a + b; }, "sum");
  const auto product = fuse([](auto a, auto b) { return a * b; }, "product");
  Tensor a = ones({3}).requires_grad_(), buf = ones({3});
  Tensor out = sum(a, buf);
  buf.add_(1.0);
  out.sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {1, 1, 1}, 0, 0));
  Tensor out2 = product(a, buf);
  buf.add_(1.0);
  EXPECT_THROW(out2.sum().backward(), ValueError);
}

TEST(Fuse, OpByOpOutputsHaveStorageOfTheirOwn) {
  const auto trace = detail::begin_fused_trace(1, "twice");
  const FusedExpr t = exp(detail::fused_input(*trace, 0));
  const auto program = detail::end_fused_trace(*trace, {t, t, detail::fused_input(*trace, 0)});
  const Tensor x = random_tensor({5}, -1, 1, 40);
  const std::vector<Tensor> slow = detail::run_fused_op_by_op(*program, {x});
  const std::vector<Tensor> fast = detail::run_fused(program, {x});
  ASSERT_EQ(slow.size(), 3u);
  EXPECT_NE(slow[0].data_ptr(), slow[1].data_ptr());
  EXPECT_NE(slow[2].data_ptr(), x.data_ptr());
  for (size_t j = 0; j < 3; ++j) EXPECT_TRUE(equal(slow[j], fast[j])) << j;
}
