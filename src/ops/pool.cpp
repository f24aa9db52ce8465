// Front ends of 2-D pooling (max, avg, adaptive avg; forward and backward, no autograd
// recording): PyTorch's argument checks and output-size arithmetic (ceil_mode included),
// 3-D inputs as a batch of one, layout and dtype handling, then one call to the slots of
// src/ops/nn_kernels.h.
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::detail {

namespace {

/// PyTorch's pooling_output_shape: floor or ceil division, and with ceil_mode the last window
/// must start inside the input or the left padding.
int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil) {
  const int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil && (out - 1) * s >= in + pad) --out;
  return out;
}

/// The input as 4-D (a 3-D [C, H, W] input gains a batch of one).
Tensor as_4d(const char* op, const Tensor& input) {
  IGNIS_CHECK(input.defined(), ValueError, "[{}] undefined input", op);
  IGNIS_CHECK(input.dim() == 3 || input.dim() == 4, ShapeError,
              "[{}] expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape {}", op,
              shape_str(input.sizes()));
  IGNIS_CHECK(input.size(-1) > 0 && input.size(-2) > 0, ShapeError,
              "[{}] expected non-empty spatial dimensions, got input shape {}", op,
              shape_str(input.sizes()));
  return input.dim() == 3 ? input.unsqueeze(0) : input;
}

Tensor from_4d(const Tensor& t, const Tensor& input) {
  return input.dim() == 3 ? t.squeeze(0) : t;
}

/// Checks p for max (dilated) or avg pooling, resolves the stride, and returns the output
/// shape of the 4-D input x.
Shape pool_shape(const char* op, const Tensor& x, Pool2dParams& p, bool is_max) {
  if (!p.stride) p.stride = p.kernel;
  const Pair2 s = *p.stride;
  for (int i = 0; i < 2; ++i) {
    IGNIS_CHECK(p.kernel[i] > 0, ValueError, "[{}] kernel size must be positive, got ({}, {})",
                op, p.kernel[0], p.kernel[1]);
    IGNIS_CHECK(s[i] > 0, ValueError, "[{}] stride must be positive, got ({}, {})", op, s[0],
                s[1]);
    IGNIS_CHECK(p.dilation[i] > 0, ValueError, "[{}] dilation must be positive, got ({}, {})",
                op, p.dilation[0], p.dilation[1]);
    const int64_t effective = is_max ? (p.kernel[i] - 1) * p.dilation[i] + 1 : p.kernel[i];
    IGNIS_CHECK(p.padding[i] >= 0 && p.padding[i] <= effective / 2, ValueError,
                "[{}] pad should be at most half of effective kernel size, but got pad = "
                "({}, {}) and kernel size ({}, {})",
                op, p.padding[0], p.padding[1], p.kernel[0], p.kernel[1]);
  }
  if (p.divisor_override)
    IGNIS_CHECK(*p.divisor_override != 0, ValueError, "[{}] divisor must be non-zero", op);
  Shape out{x.size(0), x.size(1), 0, 0};
  for (int i = 0; i < 2; ++i)
    out[2 + i] = pool_out_size(x.size(2 + i), p.kernel[i], s[i], p.padding[i],
                               is_max ? p.dilation[i] : 1, p.ceil_mode);
  IGNIS_CHECK(out[2] >= 1 && out[3] >= 1, ShapeError,
              "[{}] given input size ({}x{}x{}), calculated output size ({}x{}x{}) is too small",
              op, x.size(1), x.size(2), x.size(3), x.size(1), out[2], out[3]);
  return out;
}

/// grad_out checked against the forward's output shape and brought to x's layout and dtype.
Tensor prepare_grad(const char* op, const Tensor& grad_out, const Tensor& input,
                    const Shape& out4, bool cl, DType cd) {
  Shape expect = out4;
  if (input.dim() == 3) expect.erase(expect.begin());
  IGNIS_CHECK(grad_out.defined() && grad_out.sizes() == expect, ShapeError,
              "[{}] expected grad_out of shape {}, got {}", op, shape_str(expect),
              grad_out.defined() ? shape_str(grad_out.sizes()) : std::string("undefined"));
  check_same_dtype_device(op, input, {{"grad_out", &grad_out}});
  return to_layout(input.dim() == 3 ? grad_out.unsqueeze(0) : grad_out, cd, cl);
}

/// The dtype max pooling runs in. A 16-bit input on CUDA stays 16-bit: a maximum is exact in
/// any dtype, and so is the backward when no two windows overlap (each element then takes at
/// most one gradient), while float32 copies would move three times the bytes. Otherwise, as
/// the other pools, nn_compute_dtype's. p's stride must be resolved.
DType max_pool_dtype(const char* op, const Tensor& input, const Pool2dParams& p, bool backward) {
  const DType t = input.dtype();
  const bool sixteen_bit = t == kBFloat16 || t == kFloat16;
  if (!sixteen_bit || !input.is_cuda()) return nn_compute_dtype(op, t);
  if (!backward) return t;
  bool disjoint = true;
  for (int i = 0; i < 2; ++i)
    disjoint = disjoint && (*p.stride)[i] >= (p.kernel[i] - 1) * p.dilation[i] + 1;
  return disjoint ? t : nn_compute_dtype(op, t);
}

}  // namespace

MaxPoolResult max_pool2d_forward(const Tensor& input, const Pool2dParams& params) {
  const char* op = "max_pool2d";
  const Tensor x4 = as_4d(op, input);
  Pool2dParams p = params;
  const Shape shape = pool_shape(op, x4, p, true);
  const DType cd = max_pool_dtype(op, input, p, false);
  const bool cl = is_channels_last(x4);
  Tensor out = empty_in_layout(shape, cd, input.device(), cl);
  Tensor idx = empty_in_layout(shape, kInt64, input.device(), cl);
  if (out.numel() > 0)
    max_pool2d_forward_kernel.get(input.device())(to_layout(x4, cd, cl), out, idx, p);
  return {from_4d(out.to(input.dtype()), input), from_4d(idx, input)};
}

Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& input, const Tensor& indices,
                           const Pool2dParams& params) {
  const char* op = "max_pool2d_backward";
  const Tensor x4 = as_4d(op, input);
  Pool2dParams p = params;
  const Shape shape = pool_shape(op, x4, p, true);
  const DType cd = max_pool_dtype(op, input, p, true);
  const bool cl = is_channels_last(x4);
  const Tensor g = prepare_grad(op, grad_out, input, shape, cl, cd);
  IGNIS_CHECK(indices.defined() && indices.dtype() == kInt64 && indices.sizes() == grad_out.sizes(),
              ShapeError, "[{}] expected int64 indices of shape {}, got {}", op,
              shape_str(grad_out.sizes()),
              indices.defined() ? shape_str(indices.sizes()) + " " + dtype_name(indices.dtype())
                                : std::string("undefined"));
  const Tensor idx = to_layout(input.dim() == 3 ? indices.unsqueeze(0) : indices, kInt64, cl);
  Tensor gi = empty_in_layout(x4.sizes(), cd, input.device(), cl);
  max_pool2d_backward_kernel.get(input.device())(g, idx, gi);
  return from_4d(gi.to(input.dtype()), input);
}

Tensor avg_pool2d_forward(const Tensor& input, const Pool2dParams& params) {
  const char* op = "avg_pool2d";
  const Tensor x4 = as_4d(op, input);
  const DType cd = nn_compute_dtype(op, input.dtype());
  Pool2dParams p = params;
  p.dilation = {1, 1};
  const Shape shape = pool_shape(op, x4, p, false);
  const bool cl = is_channels_last(x4);
  Tensor out = empty_in_layout(shape, cd, input.device(), cl);
  if (out.numel() > 0) avg_pool2d_forward_kernel.get(input.device())(to_layout(x4, cd, cl), out, p);
  return from_4d(out.to(input.dtype()), input);
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Tensor& input,
                           const Pool2dParams& params) {
  const char* op = "avg_pool2d_backward";
  const Tensor x4 = as_4d(op, input);
  const DType cd = nn_compute_dtype(op, input.dtype());
  Pool2dParams p = params;
  p.dilation = {1, 1};
  const Shape shape = pool_shape(op, x4, p, false);
  const bool cl = is_channels_last(x4);
  const Tensor g = prepare_grad(op, grad_out, input, shape, cl, cd);
  Tensor gi = empty_in_layout(x4.sizes(), cd, input.device(), cl);
  avg_pool2d_backward_kernel.get(input.device())(g, gi, p);
  return from_4d(gi.to(input.dtype()), input);
}

Tensor adaptive_avg_pool2d_forward(const Tensor& input, Pair2 output_size) {
  const char* op = "adaptive_avg_pool2d";
  const Tensor x4 = as_4d(op, input);
  const DType cd = nn_compute_dtype(op, input.dtype());
  IGNIS_CHECK(output_size[0] >= 0 && output_size[1] >= 0, ValueError,
              "[{}] output size must be non-negative, got ({}, {})", op, output_size[0],
              output_size[1]);
  const bool cl = is_channels_last(x4);
  Tensor out = empty_in_layout({x4.size(0), x4.size(1), output_size[0], output_size[1]}, cd,
                               input.device(), cl);
  if (out.numel() > 0)
    adaptive_avg_pool2d_forward_kernel.get(input.device())(to_layout(x4, cd, cl), out);
  return from_4d(out.to(input.dtype()), input);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& input) {
  const char* op = "adaptive_avg_pool2d_backward";
  const Tensor x4 = as_4d(op, input);
  const DType cd = nn_compute_dtype(op, input.dtype());
  IGNIS_CHECK(grad_out.defined() && grad_out.dim() == input.dim(), ShapeError,
              "[{}] expected grad_out with {} dimensions, got {}", op, input.dim(),
              grad_out.defined() ? shape_str(grad_out.sizes()) : std::string("undefined"));
  const bool cl = is_channels_last(x4);
  const Shape out4{x4.size(0), x4.size(1), grad_out.size(-2), grad_out.size(-1)};
  const Tensor g = prepare_grad(op, grad_out, input, out4, cl, cd);
  Tensor gi = empty_in_layout(x4.sizes(), cd, input.device(), cl);
  adaptive_avg_pool2d_backward_kernel.get(input.device())(g, gi);
  return from_4d(gi.to(input.dtype()), input);
}

}  // namespace ignis::detail
