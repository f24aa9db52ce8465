// Autograd recording for the elementwise ops (formulas in elementwise_grad.cpp).
#pragma once

#include "ignis/tensor.h"
#include "kernels/binary_ops.h"
#include "kernels/unary_ops.h"

namespace ignis::detail {
/// Records the node of a unary op (no-op for non-differentiable ops).
void record_unary(kernels::UnaryOp op, const char* name, const Tensor& x, const Tensor& out,
                  const kernels::UnaryParams& params);
/// Records the node of a binary op on the materialised (promoted, unexpanded) operands.
void record_binary(kernels::BinaryOp op, const char* name, const Tensor& a, const Tensor& b,
                   const Tensor& out, double alpha);
void record_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
/// relu's gradient from the output gradient g and relu's output (g where out > 0): one
/// elementwise pass in g's layout, itself differentiable. Also the mask of fused op + ReLU
/// nodes.
Tensor relu_backward(const Tensor& g, const Tensor& out);
}  // namespace ignis::detail
