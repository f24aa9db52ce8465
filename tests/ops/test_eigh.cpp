// linalg_eigh against the defining identities, checked in float64 loops: A v_k = w_k v_k for
// every pair, V^T V = I, ascending eigenvalues, their sum the trace; only the named triangle
// is read.
#include <gtest/gtest.h>

#include <cmath>

#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

/// A random symmetric n x n matrix (row-major values).
std::vector<double> symmetric(int64_t n, uint64_t seed) {
  auto r = random_values(n * n, -1, 1, seed);
  std::vector<double> a(size_t(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      a[size_t(i * n + j)] = r[size_t(std::min(i, j) * n + std::max(i, j))];
  return a;
}

void expect_eigenpairs(const std::vector<double>& a, int64_t n, const Tensor& w, const Tensor& v,
                       double tol) {
  ASSERT_EQ(w.sizes(), Shape({n}));
  ASSERT_EQ(v.sizes(), Shape({n, n}));
  const auto ws = values_of(w), vs = values_of(v);
  double trace = 0, sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    trace += a[size_t(k * n + k)];
    sum += ws[size_t(k)];
    if (k > 0) EXPECT_LE(ws[size_t(k - 1)], ws[size_t(k)] + tol) << "not ascending at " << k;
    for (int64_t i = 0; i < n; ++i) {  // (A v_k)_i = w_k v_ik
      double av = 0;
      for (int64_t j = 0; j < n; ++j) av += a[size_t(i * n + j)] * vs[size_t(j * n + k)];
      EXPECT_NEAR(av, ws[size_t(k)] * vs[size_t(i * n + k)], tol) << "pair " << k << " row " << i;
    }
    for (int64_t l = 0; l < n; ++l) {  // (V^T V)_kl = delta_kl
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += vs[size_t(i * n + k)] * vs[size_t(i * n + l)];
      EXPECT_NEAR(dot, k == l ? 1.0 : 0.0, tol) << "columns " << k << ", " << l;
    }
  }
  EXPECT_NEAR(sum, trace, tol * double(n));
}

TEST(LinalgEigh, Float64PairsSatisfyTheDefinition) {
  for (int64_t n : {1, 2, 5, 12, 40}) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    const auto a = symmetric(n, uint64_t(n));
    auto [w, v] = linalg_eigh(tensor(a, Shape{n, n}, kFloat64));
    EXPECT_EQ(w.dtype(), kFloat64);
    expect_eigenpairs(a, n, w, v, 1e-10);
  }
}

TEST(LinalgEigh, Float32InputGivesFloat32Results) {
  const int64_t n = 12;
  const auto a = round_to(symmetric(n, 3), kFloat32);
  auto [w, v] = linalg_eigh(tensor(a, Shape{n, n}, kFloat64).to(kFloat32));
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_EQ(v.dtype(), kFloat32);
  expect_eigenpairs(a, n, w, v, 1e-5);
}

TEST(LinalgEigh, ReadsOnlyTheNamedTriangle) {
  const int64_t n = 6;
  const auto a = symmetric(n, 9);
  std::vector<double> lower = a, upper = a;  // garbage in the triangle that must not be read
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (j > i) lower[size_t(i * n + j)] = 100.0 + double(j);
      if (j < i) upper[size_t(i * n + j)] = -100.0 - double(i);
    }
  auto [wl, vl] = linalg_eigh(tensor(lower, Shape{n, n}, kFloat64));
  expect_eigenpairs(a, n, wl, vl, 1e-10);
  auto [wu, vu] = linalg_eigh(tensor(upper, Shape{n, n}, kFloat64), 'U');
  expect_eigenpairs(a, n, wu, vu, 1e-10);
}

TEST(LinalgEigh, ReadsStridedViews) {
  const int64_t n = 7;
  const auto a = symmetric(n, 4);
  const Tensor t = make_input(a, Shape{n, n}, kFloat64, Layout::Transposed);
  auto [w, v] = linalg_eigh(t);
  expect_eigenpairs(a, n, w, v, 1e-10);
}

TEST(LinalgEigh, BadInputIsNamed) {
  EXPECT_THROW_MSG(linalg_eigh(zeros({2, 3}, kFloat64)), ValueError, "square");
  EXPECT_THROW_MSG(linalg_eigh(zeros({2, 2, 2}, kFloat64)), ValueError, "[linalg_eigh]");
  EXPECT_THROW_MSG(linalg_eigh(zeros({2, 2}, kInt64)), DTypeError, "float32 or float64");
  EXPECT_THROW_MSG(linalg_eigh(zeros({2, 2}, kFloat64), 'X'), ValueError, "uplo");
  EXPECT_THROW_MSG(linalg_eigh(full({3, 3}, std::nan(""), kFloat64)), ValueError, "non-finite");
}

}  // namespace
}  // namespace ignis::testing
