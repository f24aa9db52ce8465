// The kernel slots of nn::functional::linear with a fused activation (src/nn/functional.cpp):
// a forward that writes act(x W^T + b) as the product's epilogue, and the ReLU backward that
// masks the output gradient and sums it into the bias gradient in the same pass, or, when the
// input needs no gradient, also forms the weight gradient from the mask without storing it.
#pragma once

#include "core/dispatch.h"

namespace ignis::detail {

/// out (m x n, contiguous) = relu(x (m x k) @ w^T + bias) for x and w (n x k) with any
/// strides (in elements; element (i, p) of x at x + i * x_rs + p * x_cs); bias (n contiguous
/// elements) may be null. All of `dtype`.
struct LinearReluForward {
  DType dtype = kFloat32;
  int64_t m = 0, n = 0, k = 0;
  const void* x = nullptr;
  int64_t x_rs = 0, x_cs = 0;
  const void* w = nullptr;
  int64_t w_rs = 0, w_cs = 0;
  const void* bias = nullptr;
  void* out = nullptr;
  Device device;  // of every operand
};
/// Returns false when the kernel does not take this product (dtype or shape); the caller then
/// composes the product and the activation from other ops.
inline KernelSlot<bool (*)(const LinearReluForward&)> linear_relu_forward_kernel{"linear_relu"};

/// dz (m x n) = g where y > 0, else 0; dbias (n elements, may be null) = column sums of dz.
/// g, y and dz contiguous, of `dtype`.
struct ReluMaskBackward {
  DType dtype = kFloat32;
  int64_t m = 0, n = 0;
  const void* g = nullptr;
  const void* y = nullptr;
  void* dz = nullptr;
  void* dbias = nullptr;
  Device device;  // of every operand
};
/// Returns false when the dtype is not supported (the caller composes it).
inline KernelSlot<bool (*)(const ReluMaskBackward&)> relu_mask_backward_kernel{
    "linear_relu_backward"};

/// dw (n x k, contiguous) = dz^T x and dbias (n elements, may be null) = column sums of dz,
/// where dz = g masked by y > 0 is never stored: the weight gradient of a linear + ReLU layer
/// whose input needs no gradient (an MLP's first layer). g and y contiguous (m x n); x (m x k)
/// with any strides. All of `dtype`.
struct ReluMaskWeightGrad {
  DType dtype = kFloat32;
  int64_t m = 0, n = 0, k = 0;
  const void* g = nullptr;
  const void* y = nullptr;
  const void* x = nullptr;
  int64_t x_rs = 0, x_cs = 0;
  void* dw = nullptr;
  void* dbias = nullptr;
};
/// Returns false when the kernel does not take this shape or dtype (the caller then masks and
/// multiplies separately).
inline KernelSlot<bool (*)(const ReluMaskWeightGrad&)> relu_mask_weight_grad_kernel{
    "linear_relu_weight_grad"};

}  // namespace ignis::detail
