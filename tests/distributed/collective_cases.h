// The inputs and expected results of the collective tests, shared by the MPI (CPU tensors)
// and NCCL (CUDA tensors) suites: rank r's element i follows a formula every rank can evaluate,
// so each rank computes the expected result of a collective directly.
#pragma once

#include <algorithm>
#include <vector>

#include "ignis/distributed.h"
#include "support/test_support.h"

namespace ignis::testing::collective_cases {

namespace ig = ignis;
namespace dist = ignis::distributed;

inline constexpr ig::DType kDTypes[] = {ig::kFloat32, ig::kFloat64, ig::kBFloat16, ig::kFloat16,
                                 ig::kInt64,   ig::kInt32,   ig::kUInt8,    ig::kBool};

// Element i of rank r's input. Small integers, so that sums over 3 ranks are exact in every
// dtype (bf16 holds integers up to 256 exactly) and results can be compared exactly.
inline double value(ig::DType d, int r, int64_t i) {
  if (d == ig::kBool) return (r + i) % 3 == 0 ? 1 : 0;
  if (d == ig::kUInt8) return double((7 * r + 3 * i) % 41);
  return double((7 * r + 3 * i) % 41 - 20);
}
inline std::vector<double> values(ig::DType d, int r, int64_t n, int64_t first = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = value(d, r, first + i);
  return v;
}

// The reduction over every rank of value(d, s, first + i), as the op defines it on dtype d.
inline std::vector<double> reduced(ig::DType d, dist::ReduceOp op, int64_t n, int64_t first = 0) {
  const int size = dist::world_size();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double acc = value(d, 0, first + i);
    for (int s = 1; s < size; ++s) {
      double v = value(d, s, first + i);
      if (d == ig::kBool)  // sum and max are logical or, min logical and
        acc = op == dist::ReduceOp::Min ? double(acc && v) : double(acc || v);
      else if (op == dist::ReduceOp::Max)
        acc = std::max(acc, v);
      else if (op == dist::ReduceOp::Min)
        acc = std::min(acc, v);
      else
        acc += v;
    }
    out[size_t(i)] = op == dist::ReduceOp::Avg ? acc / size : acc;
  }
  if (op != dist::ReduceOp::Avg) return out;
  // float32 division; 16-bit types then round once more (Note [bf16 and f16 reductions in MPI]).
  if (d == ig::kFloat64) return round_to(out, d);
  return round_to(round_to(out, ig::kFloat32), d);
}

inline std::vector<dist::ReduceOp> ops_for(ig::DType d) {
  if (ig::is_floating(d))
    return {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Max, dist::ReduceOp::Min};
  return {dist::ReduceOp::Sum, dist::ReduceOp::Max, dist::ReduceOp::Min};
}

}  // namespace ignis::testing::collective_cases
