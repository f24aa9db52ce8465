// Gradients of the reductions (reduce.cpp) and of the ops along one dim (softmax.cpp). The
// front ends call these right after the forward when needs_grad() is true; the formulas are
// ignis ops, so they run on any device and can be differentiated again.
#pragma once

#include <cstdint>

#include "ignis/tensor.h"

namespace ignis::detail {

/// The gradient of a reduction over `mask` broadcast back to the input's shape (the reduced
/// dims are re-inserted when keepdim was false).
Tensor expand_reduced_grad(const Tensor& g, const Shape& in_sizes, uint64_t mask, bool keepdim);

void record_prod(const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim);
/// Whole-tensor max/min and amax/amin: the gradient is split evenly among tied extremes.
void record_extreme(const char* op, const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim);
/// max/min along a dim: the gradient goes to the returned index.
void record_extreme_along(const char* op, const Tensor& x, const Tensor& values,
                          const Tensor& indices, int64_t dim, bool keepdim);
void record_var_std(bool is_std, const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim,
                    double correction);
void record_norm(const Tensor& x, const Tensor& out, double p, uint64_t mask, bool keepdim);
void record_logsumexp(const Tensor& x, const Tensor& out, uint64_t mask, bool keepdim);
/// softmax / log_softmax / cumsum along the wrapped dim d.
void record_softmax(bool log, const Tensor& x, const Tensor& out, int64_t d);
void record_cumsum(const Tensor& x, const Tensor& out, int64_t d);

}  // namespace ignis::detail
