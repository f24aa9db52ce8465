// Internal entry points of the elementwise front end, for other op families that need the
// same promotion rules (reductions, indexing) or build composite ops.
#pragma once

#include <initializer_list>

#include "ignis/tensor.h"
#include "kernels/binary_ops.h"
#include "kernels/unary_ops.h"

namespace ignis {

/// A tensor or a scalar operand of an elementwise op (scalars promote by category only).
struct ElementwiseOperand {
  const Tensor* tensor = nullptr;
  const Scalar* scalar = nullptr;
  ElementwiseOperand(const Tensor& t) : tensor(&t) {}
  ElementwiseOperand(const Scalar& s) : scalar(&s) {}
};

namespace detail {
/// PyTorch's result_type over tensors and scalars.
DType result_type(std::initializer_list<ElementwiseOperand> operands);
/// True when a value of type `from` may be stored in `to` by an in-place op (same or higher
/// category: bool < integer < floating).
bool can_cast(DType from, DType to);
/// A 0-dim tensor of dtype on device holding v.
Tensor scalar_like(const Scalar& v, DType dtype, Device device);
/// Runs a unary kernel; with out, writes into *out (in place when out aliases x).
Tensor unary_op(const Tensor& x, kernels::UnaryOp op, kernels::OpKind kind, const char* name,
                const kernels::UnaryParams& params, Tensor* out);
Tensor binary_op(const ElementwiseOperand& a, const ElementwiseOperand& b, kernels::BinaryOp op,
                 kernels::BinaryKind kind, const char* name, const kernels::BinaryParams& params,
                 Tensor* out);
}  // namespace detail
}  // namespace ignis
