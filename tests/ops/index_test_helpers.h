// Shared by the indexing tests (test_index.cpp, test_join_sort.cpp): random inputs that are
// exact in each dtype and float64 helpers for the expected values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace ignis::testing::index_tests {

inline constexpr DType kDTypes[] = {kFloat32, kFloat64, kInt64, kBool, kBFloat16};
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// n random values representable in dtype (bool 0/1, integers in [-50, 50], floats).
inline std::vector<double> sample(DType dt, int64_t n, uint64_t seed) {
  std::vector<double> v = random_values(n, -50, 50, seed);
  for (double& x : v) {
    if (dt == kBool)
      x = x > 0 ? 1 : 0;
    else if (!is_floating(dt))
      x = std::floor(x);
  }
  return round_to(v, dt);
}

/// n random integers in [lo, hi).
inline std::vector<double> rand_ints(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::vector<double> v = random_values(n, 0, 1, seed);
  for (double& x : v) x = double(lo + std::min<int64_t>(hi - lo - 1, int64_t(x * double(hi - lo))));
  return v;
}

inline int64_t numel_of(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<int64_t>());
}

/// Exact comparison (copies and integer arithmetic must be exact).
inline ::testing::AssertionResult same(const Tensor& actual, const std::vector<double>& expected) {
  return all_close(actual, expected, 0, 0);
}

// ---- float64 references ----------------------------------------------------------------------
inline std::vector<double> gather_ref(const std::vector<double>& x, const Shape& xs,
                               const std::vector<double>& idx, const Shape& is, int64_t d) {
  std::vector<double> out(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    std::vector<int64_t> p = unravel(int64_t(i), is);
    p[size_t(d)] = int64_t(idx[i]);
    out[i] = x[size_t(ravel(p, xs))];
  }
  return out;
}

/// x rounded to dtype as storing it does (float32, bfloat16 round to nearest even).
inline double round_dt(double x, DType dt) {
  if (dt == kFloat32) return double(float(x));
  if (dt != kBFloat16) return x;
  float f = float(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  std::memcpy(&f, &u, 4);
  return double(f);
}

/// x (shape xs) with x[p with p[d] = idx[p]] (= or +=) alpha * src[p] for p over is, in
/// row-major order (src has shape ss >= is); each sum is rounded to dt as it is stored.
inline std::vector<double> scatter_ref(std::vector<double> x, const Shape& xs,
                                const std::vector<double>& idx, const Shape& is,
                                const std::vector<double>& src, const Shape& ss, int64_t d,
                                bool add, double alpha = 1, DType dt = kFloat64) {
  for (int64_t i = 0; i < numel_of(is); ++i) {
    std::vector<int64_t> p = unravel(i, is);
    const double v = src[size_t(ravel(p, ss))];
    p[size_t(d)] = int64_t(idx[size_t(i)]);
    double& dst = x[size_t(ravel(p, xs))];
    dst = add ? round_dt(dst + alpha * v, dt) : v;
  }
  return x;
}

/// Tensor of shape s filled from a row-major vector (contiguous, dtype dt).
inline Tensor from_values(const std::vector<double>& v, const Shape& s, DType dt) {
  return make_input(v, s, dt, Layout::Contiguous);
}

}  // namespace ignis::testing::index_tests
