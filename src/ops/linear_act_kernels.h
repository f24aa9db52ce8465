// The kernel slots of nn::functional::linear's 2-D node (src/nn/functional.cpp). With a fused
// ReLU: a forward that writes relu(x W^T + b) as the product's epilogue, and the backward that
// masks the output gradient and sums it into the bias gradient in the same pass, or, when the
// input needs no gradient, also forms the weight gradient from the mask without storing it.
// Without an activation: the forward and all three gradients as direct kernel calls, so that
// a small layer does not pay for the op front ends (addmm's bias broadcast, two mm, a sum).
#pragma once

#include "core/dispatch.h"

namespace ignis::detail {

/// out (m x n, contiguous) = act(x (m x k) @ w^T + bias) for x and w (n x k) with any
/// strides (in elements; element (i, p) of x at x + i * x_rs + p * x_cs); bias (n contiguous
/// elements) may be null. All of `dtype`. act is the slot's: ReLU or none. m, n, k >= 1.
struct LinearForward {
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
inline KernelSlot<bool (*)(const LinearForward&)> linear_relu_forward_kernel{"linear_relu"};
/// The same without the activation; false when the kernel does not take it (the caller then
/// uses addmm).
inline KernelSlot<bool (*)(const LinearForward&)> linear_forward_kernel{"linear"};

/// The gradients of out = x w^T + b from g (m x n, contiguous): dx (m x k) = g w,
/// dw (n x k) = g^T x and dbias (n) = the column sums of g, each contiguous and null when not
/// wanted; x and w with any strides. All of `dtype`; m, n, k >= 1.
struct LinearBackward {
  DType dtype = kFloat32;
  int64_t m = 0, n = 0, k = 0;
  const void* g = nullptr;
  const void* x = nullptr;
  int64_t x_rs = 0, x_cs = 0;
  const void* w = nullptr;
  int64_t w_rs = 0, w_cs = 0;
  void* dx = nullptr;
  void* dw = nullptr;
  void* dbias = nullptr;
  Device device;  // of every operand
};
/// Returns false (nothing written) when the dtype is not supported; the caller then uses mm
/// and sum.
inline KernelSlot<bool (*)(const LinearBackward&)> linear_backward_kernel{"linear_backward"};

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
