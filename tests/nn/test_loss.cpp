// Losses of nn::functional against float64 loops written here, for every option combination.
#include <cmath>
#include <functional>

#include "support/test_support.h"

namespace ignis {
namespace {

namespace F = nn::functional;
using F::Reduction;
using testing::all_close;
using testing::make_input;
using testing::random_values;
using testing::values_of;

constexpr Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

// Reduces per-element values as the reduction says (mean: plain mean).
std::vector<double> reduce_ref(const std::vector<double>& v, Reduction r) {
  if (r == Reduction::None) return v;
  double s = 0;
  for (double x : v) s += x;
  return {r == Reduction::Sum ? s : s / double(v.size())};
}

// log_softmax of row r of a row-major [rows, C] matrix.
std::vector<double> log_softmax_row(const std::vector<double>& x, int64_t r, int64_t C) {
  double m = -INFINITY, s = 0;
  for (int64_t c = 0; c < C; ++c) m = std::max(m, x[r * C + c]);
  for (int64_t c = 0; c < C; ++c) s += std::exp(x[r * C + c] - m);
  std::vector<double> out;
  for (int64_t c = 0; c < C; ++c) out.push_back(x[r * C + c] - m - std::log(s));
  return out;
}

// PyTorch's cross entropy with class-index targets: rows of [M, C] logits.
std::vector<double> ce_ref(const std::vector<double>& x, const std::vector<int64_t>& t, int64_t C,
                           const std::vector<double>& w, int64_t ignore, double ls, Reduction r) {
  std::vector<double> per;
  double nll_sum = 0, smooth_sum = 0, w_sum = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == ignore) {
      per.push_back(0);
      continue;
    }
    auto lp = log_softmax_row(x, int64_t(i), C);
    const double nll = -w[t[i]] * lp[t[i]];
    double smooth = 0;
    for (int64_t c = 0; c < C; ++c) smooth -= w[c] * lp[c];
    per.push_back((1 - ls) * nll + ls / double(C) * smooth);
    nll_sum += nll, smooth_sum += smooth, w_sum += w[t[i]];
  }
  if (r == Reduction::None) return per;
  if (r == Reduction::Sum) return {(1 - ls) * nll_sum + ls / double(C) * smooth_sum};
  return {((1 - ls) * nll_sum + ls / double(C) * smooth_sum) / w_sum};
}

TEST(CrossEntropy, ClassIndicesEveryOption) {
  const int64_t N = 7, C = 5;
  auto xv = random_values(N * C, -3, 3, 21);
  std::vector<int64_t> t = {0, 2, 4, 2, 1, 3, 2};
  auto wv = random_values(C, 0.2, 2, 22);
  Tensor x = make_input(xv, {N, C}, kFloat64, testing::Layout::Transposed);
  Tensor target = tensor(t);
  for (bool weighted : {false, true})
    for (int64_t ignore : {-100, 2})
      for (double ls : {0.0, 0.15})
        for (Reduction r : kReductions) {
          F::CrossEntropyOptions o{.ignore_index = ignore, .label_smoothing = ls, .reduction = r};
          if (weighted) o.weight = tensor(wv);
          auto expected = ce_ref(xv, t, C, weighted ? wv : std::vector<double>(C, 1.0), ignore,
                                 ls, r);
          EXPECT_TRUE(all_close(F::cross_entropy(x, target, o), expected, 1e-12, 1e-14))
              << "weighted " << weighted << " ignore " << ignore << " ls " << ls << " r "
              << int(r);
          if (ls == 0) {  // nll_loss of log_softmax is the same thing
            Tensor nll = F::nll_loss(log_softmax(x, 1), target,
                                     {.weight = o.weight, .ignore_index = ignore, .reduction = r});
            EXPECT_TRUE(all_close(nll, expected, 1e-12, 1e-14));
          }
        }
  // float32 logits agree at float32 precision.
  Tensor x32 = x.to(kFloat32);
  EXPECT_TRUE(all_close(F::cross_entropy(x32, target),
                        ce_ref(xv, t, C, std::vector<double>(C, 1.0), -100, 0, Reduction::Mean),
                        1e-5, 1e-6));
}

// float32 logits of few classes take the kernel's path that computes 8 rows at once (one per
// vector lane), the rest (and more classes) the softmax kernel's rows: per-row losses and
// gradients against float64 for batches of whole and partial groups of 8 rows, up to and past
// the 16-class limit and past the softmax's 1024-element sum blocks, with an ignored row and
// class weights.
TEST(CrossEntropy, Float32RowGroupsMatchFloat64) {
  uint64_t seed = 900;
  for (int64_t N : {8, 21, 64})
    for (int64_t C : {1, 2, 10, 16, 17, 1500}) {
      SCOPED_TRACE(::testing::Message() << "N " << N << " C " << C);
      const auto xv = random_values(N * C, -4, 4, seed++);
      std::vector<int64_t> t(static_cast<size_t>(N));
      for (int64_t i = 0; i < N; ++i) t[size_t(i)] = (i * 7 + 3) % C;
      t[size_t(N / 2)] = -100;  // ignored
      std::vector<double> w(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) w[size_t(c)] = 0.5 + 0.1 * double(c);
      const Tensor weight = make_input(w, {C}, kFloat32);
      const Tensor x = make_input(xv, {N, C}, kFloat32).requires_grad_();
      const Tensor target = tensor(t, Shape{N});
      const Tensor per_row =
          F::cross_entropy(x, target, {.weight = weight, .reduction = Reduction::None});
      EXPECT_TRUE(all_close(per_row, ce_ref(xv, t, C, w, -100, 0, Reduction::None), 1e-5, 1e-6));
      // d(sum of per-row losses)/dx = w_t (softmax - onehot) on kept rows, from float64.
      per_row.sum().backward();
      std::vector<double> expected(size_t(N * C), 0.0);
      for (int64_t i = 0; i < N; ++i) {
        if (t[size_t(i)] == -100) continue;
        const auto lp = log_softmax_row(xv, i, C);
        for (int64_t c = 0; c < C; ++c)
          expected[size_t(i * C + c)] =
              w[size_t(t[size_t(i)])] * (std::exp(lp[size_t(c)]) - (c == t[size_t(i)] ? 1 : 0));
      }
      EXPECT_TRUE(all_close(x.grad(), expected, 1e-5, 1e-6));
    }
}

// The fused [N, C] path (one node, its own backward kernel) against central differences for
// every option, and its create_graph formula against differences of the gradient itself.
TEST(CrossEntropy, GradientsEveryOption) {
  const int64_t N = 6, C = 4;
  Tensor x = testing::random_tensor({N, C}, -2, 2, 41).requires_grad_(true);
  Tensor target = tensor<int64_t>({0, 3, 2, 2, 1, 3});
  Tensor w = testing::random_tensor({C}, 0.3, 1.7, 42);
  for (bool weighted : {false, true})
    for (int64_t ignore : {-100, 2})
      for (double ls : {0.0, 0.2})
        for (Reduction r : kReductions) {
          F::CrossEntropyOptions o{.ignore_index = ignore, .label_smoothing = ls, .reduction = r};
          if (weighted) o.weight = w;
          const std::string what = "cross_entropy weighted " + std::to_string(weighted) +
                                   " ignore " + std::to_string(ignore) + " ls " +
                                   std::to_string(ls) + " r " + std::to_string(int(r));
          testing::expect_gradcheck(what, [&](const auto& v) { return F::cross_entropy(v[0], target, o); }, {x});
          // create_graph: the gradient's own gradient (a weighted sum of it) by differences.
          testing::expect_gradcheck(what + " double backward", [&](const auto& v) {
            // The finite differences evaluate this on plain perturbed copies: make them leaves.
            EnableGradGuard grad_on;
            Tensor xin = v[0].requires_grad() ? v[0] : v[0].detach().requires_grad_(true);
            Tensor loss = F::cross_entropy(xin, target, o).sum();
            Tensor g = autograd::grad({loss}, {xin}, {}, true, true)[0];
            return (g * g).sum();
          }, {x});
        }
  // float32 logits: the kernel's float path against the float64 gradient.
  Tensor x32 = x.detach().to(kFloat32).requires_grad_(true);
  F::cross_entropy(x32, target, {.weight = w.to(kFloat32), .label_smoothing = 0.1}).backward();
  Tensor x64 = x.detach().clone().requires_grad_(true);
  F::cross_entropy(x64, target, {.weight = w, .label_smoothing = 0.1}).backward();
  EXPECT_TRUE(all_close(x32.grad(), values_of(x64.grad()), 1e-5, 1e-7));
}

TEST(CrossEntropy, SpatialAndUnbatchedInputs) {
  // [N, C, d]: the class dim is 1; the reference moves it last.
  const int64_t N = 2, C = 4, D = 3;
  auto xv = random_values(N * C * D, -2, 2, 31);
  std::vector<int64_t> t = {3, 0, 1, 2, 2, -100};
  std::vector<double> rows;  // [N*D, C]
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t c = 0; c < C; ++c) rows.push_back(xv[(n * C + c) * D + d]);
  auto wv = random_values(C, 0.5, 1.5, 32);
  for (Reduction r : kReductions) {
    Tensor out = F::cross_entropy(tensor(xv, Shape{N, C, D}), tensor(t, Shape{N, D}),
                                  {.weight = tensor(wv), .label_smoothing = 0.1, .reduction = r});
    if (r == Reduction::None) EXPECT_EQ(out.sizes(), (Shape{N, D}));
    EXPECT_TRUE(all_close(out, ce_ref(rows, t, C, wv, -100, 0.1, r), 1e-12, 1e-14));
  }
  // [C] logits with a 0-dim target.
  auto x1 = random_values(C, -1, 1, 33);
  EXPECT_TRUE(all_close(F::cross_entropy(tensor(x1), scalar_tensor(int64_t(2))),
                        ce_ref(x1, {2}, C, std::vector<double>(C, 1.0), -100, 0, Reduction::Mean),
                        1e-12, 1e-14));
}

TEST(CrossEntropy, ProbabilityTargets) {
  const int64_t N = 6, C = 4;
  auto xv = random_values(N * C, -3, 3, 41);
  auto pv = random_values(N * C, 0, 1, 42);
  for (int64_t n = 0; n < N; ++n) {  // normalise rows
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += pv[n * C + c];
    for (int64_t c = 0; c < C; ++c) pv[n * C + c] /= s;
  }
  auto wv = random_values(C, 0.2, 2, 43);
  for (bool weighted : {false, true})
    for (double ls : {0.0, 0.2})
      for (Reduction r : kReductions) {
        std::vector<double> per;
        for (int64_t n = 0; n < N; ++n) {
          auto lp = log_softmax_row(xv, n, C);
          double s = 0;
          for (int64_t c = 0; c < C; ++c)
            s -= (weighted ? wv[c] : 1) * (pv[n * C + c] * (1 - ls) + ls / double(C)) * lp[c];
          per.push_back(s);
        }
        F::CrossEntropyOptions o{.label_smoothing = ls, .reduction = r};
        if (weighted) o.weight = tensor(wv);
        EXPECT_TRUE(all_close(F::cross_entropy(tensor(xv, Shape{N, C}), tensor(pv, Shape{N, C}), o),
                              reduce_ref(per, r), 1e-12, 1e-14))
            << weighted << " " << ls << " " << int(r);
      }
}

TEST(CrossEntropy, Errors) {
  Tensor x = zeros({3, 10});
  EXPECT_THROW_MSG(F::cross_entropy(x, tensor<int64_t>({1, 12, 3})), IndexError,
                   "[cross_entropy] target 12 is out of range for 10 classes");
  EXPECT_THROW_MSG(F::cross_entropy(x, tensor<int64_t>({1, -1, 3})), IndexError,
                   "target -1 is out of range");
  EXPECT_THROW_MSG(F::cross_entropy(x, tensor<int64_t>({1, 2})), ShapeError,
                   "[cross_entropy] input [3, 10] expects target [3], got [2]");
  EXPECT_THROW_MSG(F::cross_entropy(x, tensor<int64_t>({1, 2, 3}), {.weight = ones({9})}),
                   ShapeError, "weight must be 1-D with 10 elements");
  EXPECT_THROW_MSG(F::cross_entropy(x, zeros({3, 9})), ShapeError, "must have the same shape");
  EXPECT_THROW_MSG(F::cross_entropy(x, tensor<int64_t>({1, 2, 3}), {.label_smoothing = 1.5}),
                   ValueError, "label_smoothing must be in [0, 1]");
  EXPECT_THROW_MSG(F::mse_loss(x, x, Reduction::BatchMean), ValueError, "only supported by kl_div");
}

void check_pointwise(const char* name, std::function<Tensor(Tensor, Tensor, Reduction)> fn,
                     std::function<double(double, double)> ref) {
  auto xv = random_values(30, -3, 3, 51), tv = random_values(30, -3, 3, 52);
  xv[3] = tv[3] + 0.2;  // inside smooth_l1's quadratic zone
  std::vector<double> per;
  for (size_t i = 0; i < xv.size(); ++i) per.push_back(ref(xv[i], tv[i]));
  for (Reduction r : kReductions)
    EXPECT_TRUE(all_close(fn(make_input(xv, {5, 6}, kFloat64, testing::Layout::Strided),
                             tensor(tv, Shape{5, 6}), r),
                          reduce_ref(per, r), 1e-12, 1e-14))
        << name << " " << int(r);
}

TEST(RegressionLosses, MatchLoops) {
  check_pointwise("mse", [](Tensor a, Tensor b, Reduction r) { return F::mse_loss(a, b, r); },
                  [](double x, double t) { return (x - t) * (x - t); });
  check_pointwise("l1", [](Tensor a, Tensor b, Reduction r) { return F::l1_loss(a, b, r); },
                  [](double x, double t) { return std::abs(x - t); });
  for (double beta : {0.0, 0.5, 2.0})
    check_pointwise(
        "smooth_l1",
        [beta](Tensor a, Tensor b, Reduction r) { return F::smooth_l1_loss(a, b, r, beta); },
        [beta](double x, double t) {
          const double d = std::abs(x - t);
          return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
        });
  EXPECT_THROW_MSG(F::mse_loss(zeros({3, 4}), zeros({3})), ShapeError,
                   "[mse_loss] input [3, 4] and target [3] must have the same shape");
}

TEST(BinaryCrossEntropy, ClampsLogsAtMinus100) {
  auto xv = random_values(12, 0.01, 0.99, 61), tv = random_values(12, 0, 1, 62);
  xv[0] = 0, tv[0] = 1;  // log(0) clamped: loss 100
  xv[1] = 1, tv[1] = 0;
  xv[2] = 1, tv[2] = 1;  // loss 0 (0 * -100 term)
  auto wv = random_values(12, 0.5, 2, 63);
  for (bool weighted : {false, true})
    for (Reduction r : kReductions) {
      std::vector<double> per;
      for (size_t i = 0; i < 12; ++i) {
        const double lx = std::max(std::log(xv[i]), -100.0);
        const double l1x = std::max(std::log(1 - xv[i]), -100.0);
        per.push_back(-(weighted ? wv[i] : 1) * (tv[i] * lx + (1 - tv[i]) * l1x));
      }
      F::BCEOptions o{.reduction = r};
      if (weighted) o.weight = tensor(wv, Shape{3, 4});
      EXPECT_TRUE(all_close(F::binary_cross_entropy(tensor(xv, Shape{3, 4}),
                                                    tensor(tv, Shape{3, 4}), o),
                            reduce_ref(per, r), 1e-12, 1e-14));
    }
  EXPECT_THROW_MSG(F::binary_cross_entropy(full({2}, 1.5), zeros({2})), ValueError,
                   "should be between 0 and 1");
}

// -[pw t log(sigmoid(x)) + (1 - t) log(1 - sigmoid(x))] with a log-sigmoid that is exact for
// large |x| (a different formulation from the one the library uses).
double bce_logits_ref(double x, double t, double pw) {
  auto log_sigmoid = [](double v) { return v > 0 ? -std::log1p(std::exp(-v)) : v - std::log1p(std::exp(v)); };
  return -(pw * t * log_sigmoid(x) + (1 - t) * log_sigmoid(-x));
}

TEST(BinaryCrossEntropy, WithLogitsStableAtLargeMagnitudes) {
  const int64_t N = 4, C = 3;
  auto xv = random_values(N * C, -8, 8, 71), tv = random_values(N * C, 0, 1, 72);
  xv[0] = 200, xv[1] = -200, xv[2] = 1e4, xv[3] = -1e4;
  tv[0] = 0, tv[1] = 1;
  auto pw = random_values(C, 0.5, 3, 73), wv = random_values(N * C, 0.5, 2, 74);
  for (DType dt : {kFloat64, kFloat32})
    for (bool use_pw : {false, true})
      for (bool weighted : {false, true})
        for (Reduction r : kReductions) {
          std::vector<double> per;
          for (int64_t i = 0; i < N * C; ++i)
            per.push_back((weighted ? wv[i] : 1) *
                          bce_logits_ref(xv[i], tv[i], use_pw ? pw[i % C] : 1));
          F::BCEWithLogitsOptions o{.reduction = r};
          if (use_pw) o.pos_weight = tensor(pw).to(dt);
          if (weighted) o.weight = tensor(wv, Shape{N, C}).to(dt);
          Tensor out = F::binary_cross_entropy_with_logits(tensor(xv, Shape{N, C}).to(dt),
                                                           tensor(tv, Shape{N, C}).to(dt), o);
          EXPECT_TRUE(all(isfinite(out)).item<bool>());
          const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
          EXPECT_TRUE(all_close(out, reduce_ref(per, r), tol, tol))
              << dtype_name(dt) << use_pw << weighted << int(r);
        }
}

TEST(BinaryCrossEntropy, GradientsAtZeroAndOneAreFiniteAsPyTorchs) {
  // PyTorch's backward: d/dx = (x - t) / max(x (1 - x), 1e-12), d/dt = log(1 - x) - log(x).
  // Through the clamped logs x = 0 or 1 gave NaN (0 * inf) and x = 1e-30 gave -1e30.
  const std::vector<double> xv{0, 1, 0, 1, 1e-30, 0.25, 0.9}, tv{0, 1, 1, 0, 1, 0.5, 0.2};
  Tensor x = tensor(xv).requires_grad_(), t = tensor(tv).requires_grad_();
  F::binary_cross_entropy(x, t, {.reduction = Reduction::Sum}).backward();
  std::vector<double> gx, gt;
  for (size_t i = 0; i < xv.size(); ++i) {
    gx.push_back((xv[i] - tv[i]) / std::max(xv[i] * (1 - xv[i]), 1e-12));
    gt.push_back(std::log(1 - xv[i]) - std::log(xv[i]));
  }
  EXPECT_TRUE(all_close(x.grad(), gx, 1e-12, 0));
  EXPECT_TRUE(all_close(t.grad(), gt, 1e-12, 0));  // +-inf where x is 0 or 1, as PyTorch
  // The float32 sigmoid of 20 rounds to 1: the logit's gradient is 0, not NaN.
  Tensor z = tensor<float>({20, -20, 0.5}).requires_grad_();
  F::binary_cross_entropy(sigmoid(z), tensor<float>({1, 0, 1}), {.reduction = Reduction::Sum})
      .backward();
  const double s = 1 / (1 + std::exp(-0.5));
  EXPECT_EQ(z.grad().to(kFloat64).to_vector<double>()[0], 0.0);
  EXPECT_TRUE(all_close(z.grad().narrow(0, 2, 1), {s - 1}, 1e-6, 0));
  EXPECT_TRUE(all(isfinite(z.grad())).item<bool>());
}

TEST(BinaryCrossEntropy, WithLogitsGradientAtZeroIsSigmoidMinusTarget) {
  // d/dx = (1 - t) + (1 + (pw - 1) t) (sigmoid(x) - 1): at x = 0, sigmoid(x) - 1 = -0.5 (the
  // composed |x| and relu(-x) had slope 0 there). A sweep across softplus's threshold too.
  const std::vector<double> xv{0, 0, 0, -0.0, 1e-8, -21, 21, -39, 39, -41, 41, -100};
  const std::vector<double> tv{1, 0, 0.5, 1, 0.3, 1, 0, 0.5, 0.5, 1, 0, 0.25};
  for (double pw : {1.0, 3.0}) {
    SCOPED_TRACE(pw);
    Tensor x = tensor(xv).requires_grad_();
    F::BCEWithLogitsOptions o{.reduction = Reduction::Sum};
    if (pw != 1.0) o.pos_weight = full({int64_t(xv.size())}, pw, kFloat64);
    Tensor loss = F::binary_cross_entropy_with_logits(x, tensor(tv), o);
    loss.backward();
    std::vector<double> g;
    double total = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double sig = 1 / (1 + std::exp(-xv[i]));
      g.push_back((1 - tv[i]) + (1 + (pw - 1) * tv[i]) * (sig - 1));
      total += bce_logits_ref(xv[i], tv[i], pw);
    }
    EXPECT_TRUE(all_close(x.grad(), g, 1e-12, 1e-15));
    EXPECT_NEAR(loss.item<double>(), total, 1e-12 * total);
  }
}

TEST(CrossEntropy, AnEmptyBatchHasAnEmptyGradient) {
  for (Reduction r : kReductions) {
    SCOPED_TRACE(int(r));
    Tensor x = zeros({0, 4}).requires_grad_();
    Tensor l = F::cross_entropy(x, zeros({0}, kInt64), {.reduction = r});
    (l * 2.0).sum().backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().sizes(), (Shape{0, 4}));
  }
}

TEST(KLDiv, EveryReductionAndLogTarget) {
  const int64_t N = 3, C = 4;
  auto xv = random_values(N * C, -3, 0, 81), tv = random_values(N * C, 0, 1, 82);
  tv[2] = 0, tv[7] = 0;  // 0 * log 0 counts as 0
  for (bool log_target : {false, true}) {
    std::vector<double> per;
    for (int64_t i = 0; i < N * C; ++i) {
      const double t = log_target ? std::log(tv[i] + 0.1) : tv[i];
      per.push_back(log_target ? std::exp(t) * (t - xv[i])
                               : (t > 0 ? t * (std::log(t) - xv[i]) : 0.0));
    }
    Tensor target = tensor(tv, Shape{N, C});
    if (log_target) target = log(target + 0.1);
    Tensor input = tensor(xv, Shape{N, C});
    for (Reduction r : kReductions)
      EXPECT_TRUE(all_close(F::kl_div(input, target, {.reduction = r, .log_target = log_target}),
                            reduce_ref(per, r), 1e-12, 1e-14));
    double s = 0;
    for (double v : per) s += v;
    EXPECT_TRUE(all_close(
        F::kl_div(input, target, {.reduction = Reduction::BatchMean, .log_target = log_target}),
        {s / N}, 1e-12, 1e-14));
  }
}

}  // namespace
}  // namespace ignis
