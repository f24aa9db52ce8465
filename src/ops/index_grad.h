// Gradients of the indexing ops (index.cpp). The front ends call these right after the
// forward when needs_grad() is true. Inputs are the tensors the caller passed (0-dim ones
// included); `d` is the wrapped dim of their at-least-1-D forms.
#pragma once

#include "ignis/tensor.h"

namespace ignis::detail {

void record_index_select(const Tensor& x, int64_t d, const Tensor& index, const Tensor& out);
void record_gather(const Tensor& x, int64_t d, const Tensor& index, const Tensor& out);
/// scatter (src defined, or a scalar value when undefined) and scatter_add (add = true).
void record_scatter(const char* op, const Tensor& x, int64_t d, const Tensor& index,
                    const Tensor& src, bool add, const Tensor& out);
void record_index_add(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src,
                      const Scalar& alpha, const Tensor& out);
void record_masked_fill(const Tensor& x, const Tensor& mask, const Tensor& out);
void record_masked_select(const Tensor& x, const Tensor& mask, const Tensor& out);
void record_trilu(bool lower, int64_t diagonal, const Tensor& x, const Tensor& out);

}  // namespace ignis::detail
