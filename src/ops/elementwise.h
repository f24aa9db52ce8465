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
/// PyTorch's check for a value written into a tensor (fill_, full, masked_fill, where's scalar
/// operands): ValueError naming op when v does not fit dtype. Integers must lie in the type's
/// range (uint8 also takes -255..-1, which wrap, as PyTorch's does), and a floating value
/// must be a number there; a finite value must not exceed a floating type's largest (65504 for
/// float16). Arithmetic with a scalar is not checked (uint8 + 300 wraps, as in PyTorch).
void check_fill_value(const Scalar& v, DType dtype, const char* op);
/// Writes v into every element of t, unchecked (t fresh: no autograd, no layout checks).
void fill_unchecked(const Tensor& t, const Scalar& v);
/// A 0-dim tensor of dtype on device holding v; with check_op, v must fit dtype first
/// (check_fill_value).
Tensor scalar_like(const Scalar& v, DType dtype, Device device, const char* check_op = nullptr);
/// Runs a unary kernel; with out, writes into *out (in place when out aliases x).
Tensor unary_op(const Tensor& x, kernels::UnaryOp op, kernels::OpKind kind, const char* name,
                const kernels::UnaryParams& params, Tensor* out);
Tensor binary_op(const ElementwiseOperand& a, const ElementwiseOperand& b, kernels::BinaryOp op,
                 kernels::BinaryKind kind, const char* name, const kernels::BinaryParams& params,
                 Tensor* out);
}  // namespace detail
}  // namespace ignis
