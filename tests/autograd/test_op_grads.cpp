// Gradients of the reductions, softmax family, matrix products, indexing, joining and sorting
// ops: gradcheck (float64, central finite differences) over several dims, keepdim, negative
// dims and non-contiguous inputs; hand-computed expectations where finite differences are
// invalid (ties of max/amax/norm-inf); and second derivatives through create_graph.
#include <cmath>
#include <limits>

#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// d sum(fn(x)) / dx through backward.
Tensor grad_of(const std::function<Tensor(const Tensor&)>& fn, const Tensor& x_in) {
  Tensor x = x_in.detach().requires_grad_();
  Tensor y = fn(x);
  return autograd::grad({y}, {x}, {ones_like(y)})[0];
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

void expect_values(const Tensor& got, const std::vector<double>& want, const char* what) {
  EXPECT_EQ(values_of(got), want) << what;
}

/// Runs gradcheck on a reduction for a list of dims, with keepdim off and on, on x and on
/// a transposed (non-contiguous) view of x.
void check_reduction(const std::string& name,
                     const std::function<Tensor(const Tensor&, const Shape&, bool)>& op,
                     const Tensor& x, const std::vector<Shape>& dim_lists) {
  for (const Shape& dims : dim_lists)
    for (bool keepdim : {false, true}) {
      const std::string what = name + " dims " + shape_str(dims) + (keepdim ? " keepdim" : "");
      expect_gradcheck(what, [&](const auto& v) { return op(v[0], dims, keepdim); }, {x});
      expect_gradcheck(what + " transposed",
                       [&](const auto& v) { return op(v[0].transpose(0, -1), dims, keepdim); }, {x});
    }
}

const std::vector<Shape> kDims = {{}, {0}, {1}, {-1}, {0, 2}, {-1, -3}};
}  // namespace

// ---------------------------------------------------------------------------------------------
// Reductions

TEST(OpGrads, Prod) {
  check_reduction("prod", [](const Tensor& x, const Shape& d, bool k) { return prod(x, d, k); },
                  random_tensor({2, 3, 4}, 0.5, 1.5, 1), kDims);
  // prod is linear in each factor, so finite differences stay exact at zeros.
  Tensor z = tensor<double>({2, 0, 3, 0, 0, 4, 1, 2, 3}, Shape{3, 3});
  expect_gradcheck("prod zeros", [](const auto& v) { return prod(v[0], {1}); }, {z});
  expect_gradcheck("prod zeros all", [](const auto& v) { return prod(v[0]); }, {z});
  // One zero: only it gets the product of the others; two zeros: nothing anywhere.
  expect_values(grad_of([](const Tensor& x) { return prod(x, {1}); }, z),
                {0, 6, 0, 0, 0, 0, 6, 3, 2}, "prod zeros by hand");
  expect_values(grad_of([](const Tensor& x) { return prod(x, {0}, true); }, z),
                {0, 0, 12, 2, 0, 9, 0, 0, 12}, "prod zeros dim 0 by hand");
}

TEST(OpGrads, ProdSecondDerivativesAtZeros) {
  // The Hessian of a product: d2/dx_i dx_j = product of the factors other than i and j
  // (i != j), 0 on the diagonal. Its product with v, by loops, against double backward, for
  // groups with no zero, one zero and two zeros.
  const std::vector<double> xv{1, 0, 3, 0.5, -1, 2, 0, 4, 0},
      vv{0.3, -1, 2, 1.5, 0.7, -0.2, 1, 2, 3};
  Tensor x = tensor(xv, Shape{3, 3}).requires_grad_();
  Tensor g = autograd::grad({prod(x, {1}).sum()}, {x}, {}, false, true)[0];
  Tensor hv = autograd::grad({(g * tensor(vv, Shape{3, 3})).sum()}, {x})[0];
  std::vector<double> want(9, 0.0);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        if (i == j) continue;
        double others = 1;
        for (int64_t k = 0; k < 3; ++k)
          if (k != i && k != j) others *= xv[size_t(r * 3 + k)];
        want[size_t(r * 3 + i)] += others * vv[size_t(r * 3 + j)];
      }
  EXPECT_TRUE(all_close(hv, want, 1e-12, 1e-14));
}

TEST(OpGrads, MaxMinWhole) {
  Tensor x = random_tensor({3, 4}, -2, 2, 2);
  expect_gradcheck("max", [](const auto& v) { return max(v[0]); }, {x});
  expect_gradcheck("min", [](const auto& v) { return min(v[0].t()); }, {x});
  // Ties share the gradient evenly (PyTorch's rule for whole-tensor max / min).
  Tensor t = tensor<double>({1, 3, 3, 2, 3, 0}, Shape{2, 3});
  expect_values(grad_of([](const Tensor& x) { return max(x); }, t), {0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 0},
                "max ties");
  Tensor u = tensor<double>({0, 1, 0, 2});
  expect_values(grad_of([](const Tensor& x) { return min(x); }, u), {0.5, 0, 0.5, 0}, "min ties");
}

TEST(OpGrads, MaxMinAlongDim) {
  Tensor x = random_tensor({3, 4, 5}, -2, 2, 3);
  for (int64_t dim : {0, 1, 2, -1, -2})
    for (bool keepdim : {false, true}) {
      const std::string s = " dim " + std::to_string(dim) + (keepdim ? " keepdim" : "");
      expect_gradcheck("max" + s, [&](const auto& v) { return std::get<0>(max(v[0], dim, keepdim)); }, {x});
      expect_gradcheck("min" + s, [&](const auto& v) { return std::get<0>(min(v[0], dim, keepdim)); }, {x});
      expect_gradcheck("max transposed" + s,
                       [&](const auto& v) { return std::get<0>(max(v[0].transpose(0, 2), dim, keepdim)); }, {x});
    }
  // At ties the gradient goes to the returned (first) index only.
  Tensor t = tensor<double>({3, 3, 1, 0, 2, 2}, Shape{2, 3});
  expect_values(grad_of([](const Tensor& x) { return std::get<0>(max(x, 1)); }, t), {1, 0, 0, 0, 1, 0},
                "max dim ties");
  Tensor s0 = scalar_tensor(2.5, kFloat64);
  expect_values(grad_of([](const Tensor& x) { return std::get<0>(max(x, 0)); }, s0), {1}, "max 0-dim");
}

TEST(OpGrads, AmaxAmin) {
  check_reduction("amax", [](const Tensor& x, const Shape& d, bool k) { return amax(x, d, k); },
                  random_tensor({2, 3, 4}, -2, 2, 4), kDims);
  check_reduction("amin", [](const Tensor& x, const Shape& d, bool k) { return amin(x, d, k); },
                  random_tensor({2, 3, 4}, -2, 2, 5), {{1}, {-1}, {0, 1}});
  Tensor t = tensor<double>({1, 4, 4, 2, 2, 0}, Shape{2, 3});
  expect_values(grad_of([](const Tensor& x) { return amax(x, {1}); }, t), {0, 0.5, 0.5, 0.5, 0.5, 0},
                "amax ties");
  expect_values(grad_of([](const Tensor& x) { return amin(x, {0}, true); }, t), {1, 0, 0, 0, 1, 1},
                "amin dim 0");
  expect_values(grad_of([](const Tensor& x) { return amax(x); }, t), {0, 0.5, 0.5, 0, 0, 0}, "amax all");
}

TEST(OpGrads, VarStd) {
  Tensor x = random_tensor({3, 4, 2}, -2, 2, 6);
  for (double c : {0.0, 1.0}) {
    check_reduction("var c" + std::to_string(int(c)),
                    [c](const Tensor& x, const Shape& d, bool k) { return var(x, d, c, k); }, x, kDims);
    check_reduction("std c" + std::to_string(int(c)),
                    [c](const Tensor& x, const Shape& d, bool k) { return ignis::std(x, d, c, k); }, x,
                    kDims);
  }
}

TEST(OpGrads, Norm) {
  Tensor x = random_tensor({3, 4, 2}, 0.2, 2, 7) * tensor<double>({1, -1}, Shape{2});
  for (double p : {1.0, 2.0, 3.0, kInf, -kInf})
    check_reduction("norm p=" + std::to_string(p),
                    [p](const Tensor& x, const Shape& d, bool k) { return norm(x, p, d, k); }, x,
                    {{}, {1}, {-1}, {0, 2}});
  // inf: ties of |x| share the gradient, with x's sign.
  Tensor t = tensor<double>({-3, 3, 1, 2, 0, -2}, Shape{2, 3});
  expect_values(grad_of([](const Tensor& x) { return norm(x, kInf, {1}); }, t), {-0.5, 0.5, 0, 0.5, 0, -0.5},
                "norm inf ties");
  expect_values(grad_of([](const Tensor& x) { return norm(x, kInf); }, t), {-0.5, 0.5, 0, 0, 0, 0},
                "norm inf all");
  // 2-norm of a zero vector: gradient 0, not nan.
  Tensor z = tensor<double>({0, 0, 1, 0}, Shape{2, 2});
  expect_values(grad_of([](const Tensor& x) { return norm(x, 2, {1}); }, z), {0, 0, 1, 0}, "norm 2 at 0");
}

TEST(OpGrads, Logsumexp) {
  check_reduction("logsumexp",
                  [](const Tensor& x, const Shape& d, bool k) { return logsumexp(x, d, k); },
                  random_tensor({2, 3, 4}, -3, 3, 8), kDims);
}

TEST(OpGrads, SoftmaxLogSoftmaxCumsum) {
  Tensor x = random_tensor({3, 4, 5}, -3, 3, 9);
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    const std::string s = " dim " + std::to_string(dim);
    expect_gradcheck("softmax" + s, [&](const auto& v) { return softmax(v[0], dim); }, {x});
    expect_gradcheck("log_softmax" + s, [&](const auto& v) { return log_softmax(v[0], dim); }, {x});
    expect_gradcheck("cumsum" + s, [&](const auto& v) { return cumsum(v[0], dim); }, {x});
    expect_gradcheck("softmax transposed" + s, [&](const auto& v) { return softmax(v[0].transpose(0, 2), dim); }, {x});
    expect_gradcheck("log_softmax transposed" + s,
                     [&](const auto& v) { return log_softmax(v[0].transpose(1, 2), dim); }, {x});
    expect_gradcheck("cumsum transposed" + s, [&](const auto& v) { return cumsum(v[0].transpose(0, 1), dim); }, {x});
  }
  expect_gradcheck("softmax 0-dim", [](const auto& v) { return softmax(v[0], 0); }, {scalar_tensor(1.5, kFloat64)});
  expect_gradcheck("cumsum 0-dim", [](const auto& v) { return cumsum(v[0], -1); }, {scalar_tensor(1.5, kFloat64)});
}

// ---------------------------------------------------------------------------------------------
// Matrix products

TEST(OpGrads, EdgeValuesGetPyTorchsGradients) {
  // std of a constant group: 0 (not 0/0), also for a one-element group with correction 0.
  expect_values(
      grad_of([](const Tensor& x) { return ignis::std(x); }, tensor<double>({2, 2, 2})),
      {0, 0, 0},
      "std constant");
  Tensor rows = tensor<double>({2, 2, 2, 1, 2, 4}, Shape{2, 3});
  const Tensor gs = grad_of([](const Tensor& x) { return ignis::std(x, {1}); }, rows);
  const double m = 7.0 / 3,
               sd = std::sqrt(((1 - m) * (1 - m) + (2 - m) * (2 - m) + (4 - m) * (4 - m)) / 2);
  EXPECT_TRUE(all_close(
      gs, {0, 0, 0, (1 - m) / (2 * sd), (2 - m) / (2 * sd), (4 - m) / (2 * sd)}, 1e-12, 1e-15));
  expect_values(
      grad_of(
          [](const Tensor& x) { return ignis::std(x, {1}, 0); },
          tensor<double>({5, 6}, Shape{2, 1})),
      {0, 0},
      "std of one element");
  // norm for p other than 1, 2, inf at zero elements: sign(x) |x|^(p-1) / ||x||^(p-1), 0 at 0.
  for (double p : {0.5, 1.5, 3.0}) {
    SCOPED_TRACE(p);
    const std::vector<double> xv{0, -2, 3};
    const double n = std::pow(std::pow(2, p) + std::pow(3, p), 1 / p);
    std::vector<double> want;
    for (double v : xv)
      want.push_back(
          v == 0 ? 0 : (v > 0 ? 1 : -1) * std::pow(std::abs(v), p - 1) / std::pow(n, p - 1));
    EXPECT_TRUE(all_close(
        grad_of([p](const Tensor& x) { return norm(x, p); }, tensor(xv)), want, 1e-12, 1e-15));
  }
  // Whole-tensor max and min of a group holding NaN: its NaNs share the gradient.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_values(
      grad_of([](const Tensor& x) { return max(x); }, tensor<double>({1, nan, 3})),
      {0, 1, 0},
      "max with NaN");
  expect_values(
      grad_of([](const Tensor& x) { return min(x); }, tensor<double>({1, nan, 3, nan})),
      {0, 0.5, 0, 0.5},
      "min with NaNs");
  // cumsum's gradient is the reversed cumulative sum of g, accumulated as such: float32 keeps
  // the small terms next to a large one, and an infinity or NaN reaches only the positions
  // that read it.
  for (const std::vector<float>& gv :
       {std::vector<float>{1e8f, 1, 1}, {INFINITY, 1, 1}, {1, NAN, 1}}) {
    Tensor x = zeros({2, 3}).requires_grad_();
    Tensor g = tensor<float>({gv[0], gv[1], gv[2], gv[2], gv[1], gv[0]}, Shape{2, 3});
    cumsum(x, 1).backward(g);
    std::vector<double> want(6);
    for (int64_t r = 0; r < 2; ++r) {
      float acc = 0;
      for (int64_t i = 2; i >= 0; --i) {
        acc += g.to_vector<float>()[size_t(r * 3 + i)];
        want[size_t(r * 3 + i)] = acc;
      }
    }
    const auto got = values_of(x.grad());
    for (size_t i = 0; i < 6; ++i)
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]) << i;
  }
}

TEST(OpGrads, EmptyBatchesStillBackpropagate) {
  // An empty result is still a node: an empty batch through softmax, cumsum, cat, where or
  // masked_fill gives empty gradients, not "does not require grad".
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops{
      {"softmax", [](const Tensor& x) { return softmax(x, 1); }},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x, 1); }},
      {"cumsum", [](const Tensor& x) { return cumsum(x, 0); }},
      {"cat",
       [](const Tensor& x) {
         return cat({x, x}, 1);
       }},
      {"where", [](const Tensor& x) { return where(gt(x, 0), x, zeros_like(x)); }},
      {"masked_fill", [](const Tensor& x) { return masked_fill(x, gt(x, 0), Scalar(1.0)); }},
  };
  for (const auto& [name, fn] : ops) {
    SCOPED_TRACE(name);
    Tensor x = zeros({0, 2}).requires_grad_();
    Tensor y = fn(x);
    ASSERT_TRUE(y.requires_grad());
    y.sum().backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().sizes(), (Shape{0, 2}));
  }
}

TEST(OpGrads, MmBmmDot) {
  Tensor a = random_tensor({3, 4}, -1, 1, 10), b = random_tensor({4, 2}, -1, 1, 11);
  expect_gradcheck("mm", [](const auto& v) { return mm(v[0], v[1]); }, {a, b});
  expect_gradcheck("mm transposed", [](const auto& v) { return mm(v[1].t(), v[0].t()); }, {a, b});
  Tensor ba = random_tensor({2, 3, 4}, -1, 1, 12), bb = random_tensor({2, 4, 5}, -1, 1, 13);
  expect_gradcheck("bmm", [](const auto& v) { return bmm(v[0], v[1]); }, {ba, bb});
  expect_gradcheck("bmm transposed",
                   [](const auto& v) { return bmm(v[1].transpose(1, 2), v[0].transpose(1, 2)); }, {ba, bb});
  Tensor u = random_tensor({5}, -1, 1, 14), w = random_tensor({5}, -1, 1, 15);
  expect_gradcheck("dot", [](const auto& v) { return dot(v[0], v[1]); }, {u, w});
  expect_gradcheck("outer", [](const auto& v) { return outer(v[0], v[1]); }, {u, w});
}

TEST(OpGrads, Matmul) {
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {
      {{4}, {4}},          {{3, 4}, {4}},          {{4}, {4, 2}},       {{3, 4}, {4, 2}},
      {{2, 3, 4}, {4, 5}}, {{4}, {2, 4, 5}},       {{2, 3, 4}, {4}},    {{3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {3, 4, 2}}, {{1, 3, 4}, {2, 4, 2}},
  };
  uint64_t seed = 20;
  for (const Case& c : cases) {
    const std::string what = "matmul " + shape_str(c.a) + " @ " + shape_str(c.b);
    expect_gradcheck(what, [](const auto& v) { return matmul(v[0], v[1]); },
                     {random_tensor(c.a, -1, 1, seed), random_tensor(c.b, -1, 1, seed + 1)});
    seed += 2;
  }
  // Non-contiguous operands.
  expect_gradcheck("matmul transposed", [](const auto& v) { return matmul(v[0].transpose(-1, -2), v[1]); },
                   {random_tensor({2, 4, 3}, -1, 1, 40), random_tensor({4, 2}, -1, 1, 41)});
}

TEST(OpGrads, AddmmBaddbmm) {
  Tensor a = random_tensor({3, 4}, -1, 1, 50), b = random_tensor({4, 2}, -1, 1, 51);
  for (const Shape& in_shape : {Shape{3, 2}, Shape{2}, Shape{1, 1}, Shape{3, 1}}) {
    Tensor in = random_tensor(in_shape, -1, 1, 52);
    expect_gradcheck("addmm input " + shape_str(in_shape),
                     [](const auto& v) { return addmm(v[0], v[1], v[2], 0.5, -2); }, {in, a, b});
  }
  expect_gradcheck("addmm transposed",
                   [](const auto& v) { return addmm(v[0], v[2].t(), v[1].t()); },
                   {random_tensor({2, 3}, -1, 1, 53), a, b});
  Tensor ba = random_tensor({2, 3, 4}, -1, 1, 54), bb = random_tensor({2, 4, 5}, -1, 1, 55);
  for (const Shape& in_shape : {Shape{2, 3, 5}, Shape{1, 3, 5}, Shape{5}, Shape{3, 1}}) {
    Tensor in = random_tensor(in_shape, -1, 1, 56);
    expect_gradcheck("baddbmm input " + shape_str(in_shape),
                     [](const auto& v) { return baddbmm(v[0], v[1], v[2], 1.5, 0.25); }, {in, ba, bb});
  }
}

// ---------------------------------------------------------------------------------------------
// Indexing

TEST(OpGrads, IndexSelectGather) {
  Tensor x = random_tensor({4, 3, 2}, -1, 1, 60);
  Tensor idx = tensor<int64_t>({1, 0, 1, 1, 0});  // repeated on purpose: gradients add up
  for (int64_t dim : {0, 1, 2, -1, -3})
    expect_gradcheck("index_select dim " + std::to_string(dim),
                     [&](const auto& v) { return index_select(v[0], dim, idx); }, {x});
  expect_gradcheck("index_select transposed",
                   [&](const auto& v) { return index_select(v[0].transpose(0, 2), 1, idx); }, {x});
  expect_gradcheck("index_select 0-dim", [](const auto& v) { return index_select(v[0], 0, tensor<int64_t>({0})); },
                   {scalar_tensor(0.5, kFloat64)});
  Tensor gi = tensor<int64_t>({0, 2, 2, 1, 1, 1}, Shape{2, 3});
  expect_gradcheck("gather dim 1", [&](const auto& v) { return gather(v[0], 1, gi); }, {random_tensor({3, 4}, -1, 1, 61)});
  expect_gradcheck("gather dim -1", [&](const auto& v) { return gather(v[0], -1, gi); }, {random_tensor({2, 3}, -1, 1, 62)});
  expect_gradcheck("gather dim 0", [&](const auto& v) { return gather(v[0], 0, gi); }, {random_tensor({3, 3}, -1, 1, 63)});
  expect_gradcheck("gather transposed", [&](const auto& v) { return gather(v[0].t(), 0, gi); },
                   {random_tensor({3, 3}, -1, 1, 64)});
  Tensor repeated = grad_of([&](const Tensor& x) { return gather(x, 1, gi); }, zeros({2, 3}, kFloat64));
  expect_values(repeated, {1, 0, 2, 0, 3, 0}, "gather repeated indices");
}

TEST(OpGrads, Scatter) {
  Tensor x = random_tensor({3, 4}, -1, 1, 70), src = random_tensor({2, 4}, -1, 1, 71);
  // Distinct targets within each column: the assigned value is well defined.
  Tensor idx = tensor<int64_t>({0, 2, 1, 0, 2, 1, 0, 1}, Shape{2, 4});
  expect_gradcheck("scatter", [&](const auto& v) { return scatter(v[0], 0, idx, v[1]); }, {x, src});
  expect_gradcheck("scatter dim -2 transposed",
                   [&](const auto& v) { return scatter(v[0].t().t(), -2, idx, v[1]); }, {x, src});
  expect_gradcheck("scatter value", [&](const auto& v) { return scatter(v[0], 0, idx, 2.5); }, {x});
  Tensor idx1 = tensor<int64_t>({3, 0, 1, 2, 1, 0}, Shape{3, 2});
  expect_gradcheck("scatter dim 1", [&](const auto& v) { return scatter(v[0], 1, idx1, v[1]); },
                   {x, random_tensor({3, 2}, -1, 1, 72)});
  // A src larger than the index: its unread part gets zero gradient.
  expect_gradcheck("scatter larger src", [&](const auto& v) { return scatter(v[0], 1, idx1, v[1]); },
                   {x, random_tensor({3, 5}, -1, 1, 73)});
  // scatter_add with repeated targets.
  Tensor rep = tensor<int64_t>({0, 0, 2, 0, 0, 0, 2, 2}, Shape{2, 4});
  expect_gradcheck("scatter_add", [&](const auto& v) { return scatter_add(v[0], 0, rep, v[1]); }, {x, src});
  expect_gradcheck("scatter_add larger src", [&](const auto& v) { return scatter_add(v[0], 0, rep, v[1]); },
                   {x, random_tensor({3, 5}, -1, 1, 74)});
}

TEST(OpGrads, IndexAdd) {
  Tensor x = random_tensor({4, 3}, -1, 1, 80);
  Tensor idx = tensor<int64_t>({1, 3, 1, 1, 0});  // repeated on purpose
  expect_gradcheck("index_add dim 0", [&](const auto& v) { return index_add(v[0], 0, idx, v[1], 2); },
                   {x, random_tensor({5, 3}, -1, 1, 81)});
  Tensor idx2 = tensor<int64_t>({2, 2, 0, 1, 2});
  expect_gradcheck("index_add dim -1", [&](const auto& v) { return index_add(v[0], -1, idx2, v[1], -0.5); },
                   {x, random_tensor({4, 5}, -1, 1, 82)});
  expect_gradcheck("index_add transposed", [&](const auto& v) { return index_add(v[0].t(), 1, idx, v[1].t()); },
                   {x, random_tensor({5, 3}, -1, 1, 83)});
}

TEST(OpGrads, MaskedFillSelect) {
  Tensor x = random_tensor({3, 4}, -1, 1, 90);
  Tensor mask = tensor<bool>({true, false, false, true}, Shape{1, 4});
  expect_gradcheck("masked_fill", [&](const auto& v) { return masked_fill(v[0], mask, 3.0); }, {x});
  expect_gradcheck("masked_fill broadcast x",
                   [&](const auto& v) { return masked_fill(v[0], tensor<bool>({true, false, true}, Shape{3, 1}), 1.0); },
                   {random_tensor({1, 4}, -1, 1, 91)});
  expect_gradcheck("masked_select", [&](const auto& v) { return masked_select(v[0], mask); }, {x});
  expect_gradcheck("masked_select transposed", [&](const auto& v) { return masked_select(v[0].t(), mask.view({4, 1})); },
                   {x});
  Tensor full_mask = tensor<bool>({true, false, true, true, false, true}, Shape{3, 2});
  expect_gradcheck("masked_select broadcast x", [&](const auto& v) { return masked_select(v[0], full_mask); },
                   {random_tensor({3, 1}, -1, 1, 92)});
}

TEST(OpGrads, InPlaceIndexOps) {
  Tensor idx = tensor<int64_t>({0, 2, 1, 0, 2, 1, 0, 1}, Shape{2, 4});
  Tensor rep = tensor<int64_t>({0, 0, 2, 0, 0, 0, 2, 2}, Shape{2, 4});
  Tensor mask = tensor<bool>({true, false, false, true}, Shape{1, 4});
  Tensor x = random_tensor({3, 4}, -1, 1, 100), src = random_tensor({2, 4}, -1, 1, 101);
  expect_gradcheck("scatter_", [&](const auto& v) { Tensor y = v[0] * 1; return scatter_(y, 0, idx, v[1]) * 1; }, {x, src});
  expect_gradcheck("scatter_add_", [&](const auto& v) { Tensor y = v[0] * 1; return scatter_add_(y, 0, rep, v[1]) * 1; },
                   {x, src});
  expect_gradcheck("index_add_",
                   [&](const auto& v) { Tensor y = v[0] * 1; return index_add_(y, 1, tensor<int64_t>({3, 3}), v[1], 2) * 1; },
                   {x, random_tensor({3, 2}, -1, 1, 102)});
  expect_gradcheck("masked_fill_", [&](const auto& v) { Tensor y = v[0] * 1; return masked_fill_(y, mask, 0.5) * 1; }, {x});
  // A leaf that requires grad cannot be modified in place.
  Tensor leaf = random_tensor({3, 4}, -1, 1, 103).requires_grad_();
  EXPECT_THROW(masked_fill_(leaf, mask, 0.5), ValueError);
}

TEST(OpGrads, TrilTriu) {
  Tensor x = random_tensor({2, 3, 4}, -1, 1, 110);
  for (int64_t diag : {-1, 0, 2}) {
    expect_gradcheck("tril " + std::to_string(diag), [&](const auto& v) { return tril(v[0], diag); }, {x});
    expect_gradcheck("triu " + std::to_string(diag), [&](const auto& v) { return triu(v[0].transpose(1, 2), diag); }, {x});
  }
}

// ---------------------------------------------------------------------------------------------
// Joining, splitting, sorting

TEST(OpGrads, CatStackSplit) {
  Tensor a = random_tensor({2, 3}, -1, 1, 120), b = random_tensor({2, 1}, -1, 1, 121), c = random_tensor({4, 3}, -1, 1, 122);
  expect_gradcheck("cat dim 1", [](const auto& v) { return cat({v[0], v[1]}, 1); }, {a, b});
  expect_gradcheck("cat dim -2 transposed", [](const auto& v) { return cat({v[0].t().t(), v[1]}, -2); }, {a, c});
  // The legacy empty [0] input is skipped and gets no gradient.
  Tensor empty = zeros({0}, kFloat64);
  expect_gradcheck("cat legacy empty", [&](const auto& v) { return cat({v[0], empty, v[1]}, 0); }, {a, c});
  Tensor e = zeros({0}, kFloat64).requires_grad_();
  Tensor x = a.detach().requires_grad_();
  cat({e, x}, 1).sum().backward();
  EXPECT_FALSE(e.grad().defined() && e.grad().numel() != 0);
  expect_values(x.grad(), {1, 1, 1, 1, 1, 1}, "cat after empty");
  for (int64_t dim : {0, 1, 2, -1})
    expect_gradcheck("stack dim " + std::to_string(dim), [&](const auto& v) { return stack({v[0], v[1] * 2}, dim); },
                     {a, random_tensor({2, 3}, -1, 1, 123)});
  expect_gradcheck("split", [](const auto& v) {
    auto parts = split(v[0], 2, 1);
    return cat({parts[1] * 3, parts[0], parts[2] * parts[2]}, 1);
  }, {random_tensor({3, 5}, -1, 1, 124)});
  expect_gradcheck("chunk", [](const auto& v) {
    auto parts = chunk(v[0], 2, 0);
    return parts[0] * parts[1];
  }, {random_tensor({4, 3}, -1, 1, 125)});
}

TEST(OpGrads, SortTopk) {
  Tensor x = random_tensor({3, 4, 5}, -2, 2, 130);
  for (int64_t dim : {0, 1, 2, -1})
    for (bool desc : {false, true}) {
      const std::string s = " dim " + std::to_string(dim) + (desc ? " desc" : "");
      expect_gradcheck("sort" + s, [&](const auto& v) { return std::get<0>(sort(v[0], dim, desc)); }, {x});
      expect_gradcheck("topk" + s, [&](const auto& v) { return std::get<0>(topk(v[0], 2, dim, !desc)); }, {x});
      expect_gradcheck("sort transposed" + s,
                       [&](const auto& v) { return std::get<0>(sort(v[0].transpose(0, 2), dim, desc)); }, {x});
    }
  expect_gradcheck("topk 0-dim", [](const auto& v) { return std::get<0>(topk(v[0], 1, 0)); },
                   {scalar_tensor(0.5, kFloat64)});
}

// ---------------------------------------------------------------------------------------------
// Recording rules and second derivatives

TEST(OpGrads, NoRecordingWithoutGrad) {
  Tensor x = random_tensor({3, 4}, -1, 1, 140).requires_grad_();
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(softmax(x, 1).requires_grad());
    EXPECT_FALSE(mm(x, x.t()).requires_grad());
    EXPECT_FALSE(prod(x).requires_grad());
  }
  EXPECT_TRUE(softmax(x, 1).requires_grad());
  auto [values, indices] = max(x, 1);
  EXPECT_TRUE(values.requires_grad());
  EXPECT_FALSE(indices.requires_grad());
  EXPECT_FALSE(softmax(random_tensor({3}, -1, 1, 141), 0).requires_grad());
}

TEST(OpGrads, SecondDerivatives) {
  // gradcheck of the first derivative (taken with create_graph) checks the second derivative
  // against finite differences of the first.
  auto first = [](std::function<Tensor(const Tensor&)> f) {
    return [f](const std::vector<Tensor>& v) {
      EnableGradGuard enable;  // gradcheck evaluates the objective under NoGradGuard
      Tensor y = f(v[0]);
      return autograd::grad({y}, {v[0]}, {ones_like(y)}, false, /*create_graph=*/true)[0];
    };
  };
  Tensor x = random_tensor({3, 4}, -2, 2, 150);
  Tensor w = random_tensor({3, 4}, 0.5, 1.5, 151);
  expect_gradcheck("logsumexp''", first([](const Tensor& x) { return logsumexp(x, {1}); }), {x});
  expect_gradcheck("softmax''", first([w](const Tensor& x) { return softmax(x, -1) * w; }), {x});
  expect_gradcheck("log_softmax''", first([w](const Tensor& x) { return log_softmax(x, 0) * w; }), {x});
  expect_gradcheck("prod''", first([](const Tensor& x) { return prod(x, {1}); }), {x});
  expect_gradcheck("matmul''", first([](const Tensor& x) { return matmul(x, x.t()); }), {x});
  expect_gradcheck("var''", first([](const Tensor& x) { return var(x, {0}) * var(x, {0}); }), {x});
  expect_gradcheck("gather''", first([w](const Tensor& x) {
    return gather(x * x, 1, tensor<int64_t>({0, 3, 3, 1, 2, 2}, Shape{3, 2}));
  }), {x});
  expect_gradcheck("max dim''", first([](const Tensor& x) { return pow(std::get<0>(max(x, 0)), 3); }), {x});
}
