// Helpers of the convolutional-network op tests: tensors in NCHW or channels-last layout, and
// a finite-difference gradient check (what gradcheck does) for ops given as plain functions.
#pragma once

#include <functional>

#include "ops/nn_common.h"
#include "support/test_support.h"

namespace ignis::testing {

/// values (row-major for the logical NCHW shape) in a tensor of dtype, laid out channels-last
/// in memory when cl.
inline Tensor make_nchw(const std::vector<double>& values, const Shape& shape, DType dtype,
                        bool cl) {
  Tensor t = make_input(values, shape, dtype);
  if (!cl) return t;
  Tensor r = empty({shape[0], shape[2], shape[3], shape[1]}, dtype).permute({0, 3, 1, 2});
  r.copy_(t);
  return r;
}

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Central differences of L(inputs) = sum(f(inputs) * weights) with respect to every element
/// of input k (float64 values), step h.
inline std::vector<double> numeric_grad(
    const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<std::vector<double>> values,
    const std::vector<Shape>& shapes, const std::vector<double>& weights, size_t k,
    double h = 1e-6) {
  auto loss = [&]() {
    std::vector<Tensor> ts;
    for (size_t i = 0; i < values.size(); ++i) ts.push_back(make_input(values[i], shapes[i], kFloat64));
    const std::vector<double> out = values_of(f(ts));
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += out[i] * weights[i];
    return s;
  };
  std::vector<double> g(values[k].size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double v = values[k][i];
    values[k][i] = v + h;
    const double up = loss();
    values[k][i] = v - h;
    const double down = loss();
    values[k][i] = v;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

}  // namespace ignis::testing
