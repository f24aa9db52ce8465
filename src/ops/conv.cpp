// Front ends of 2-D convolution and transposed convolution (forward and backward, no
// autograd recording): argument checks with "[conv2d] …" messages, output-shape arithmetic,
// layout and dtype handling, then one call per direction to the slots of
// src/ops/nn_kernels.h. A transposed convolution is the adjoint of a convolution, so it
// reuses the three convolution kernels with input and output exchanged.
#include "ignis/autograd.h"
#include "ignis/ops.h"
#include "autograd/meta.h"
#include "core/memory_format.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::detail {

namespace {

std::string pair_str(Pair2 p) { return fmt::format("({}, {})", p[0], p[1]); }

void check_positive(const char* op, const char* what, Pair2 v) {
  IGNIS_CHECK(v[0] > 0 && v[1] > 0, ValueError, "[{}] {} must be positive, got {}", op, what,
              pair_str(v));
}

/// Output size of a convolution along one dim; the front end has checked that it is >= 1.
int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t pad_end, int64_t d) {
  return (in + pad + pad_end - d * (k - 1) - 1) / s + 1;
}

/// Checks shared by conv2d and conv_transpose2d: 4-D tensors, dtypes, devices, groups and the
/// bias. `in_name` names the weight dim that must equal the input's channels.
void check_conv_common(const char* op, const Tensor& input, const Tensor& weight,
                       const Tensor& bias, int64_t groups, int64_t bias_size) {
  check_same_dtype_device(op, input, {{"weight", &weight}, {"bias", &bias}});
  IGNIS_CHECK(weight.defined(), ValueError, "[{}] undefined weight", op);
  nn_compute_dtype(op, input.dtype());
  IGNIS_CHECK(input.dim() == 4, ShapeError,
              "[{}] expected a 4-D input [N, C, H, W], got shape {}", op, shape_str(input.sizes()));
  IGNIS_CHECK(weight.dim() == 4, ShapeError, "[{}] expected a 4-D weight, got shape {}", op,
              shape_str(weight.sizes()));
  IGNIS_CHECK(groups > 0, ValueError, "[{}] groups must be positive, got {}", op, groups);
  if (bias.defined())
    IGNIS_CHECK(bias.dim() == 1 && bias.size(0) == bias_size, ShapeError,
                "[{}] expected bias of shape [{}], got {}", op, bias_size, shape_str(bias.sizes()));
}

/// Checks the convolution geometry and returns the output's spatial size.
Pair2 conv_output_hw(const char* op, const Tensor& input, const Tensor& weight,
                     const Conv2dParams& p) {
  check_positive(op, "stride", p.stride);
  check_positive(op, "dilation", p.dilation);
  Pair2 out{};
  for (int i = 0; i < 2; ++i) {
    const int64_t in = input.size(2 + i), k = weight.size(2 + i);
    const int64_t padded = in + p.padding[i] + p.padding_end[i];
    const int64_t span = p.dilation[i] * (k - 1) + 1;
    IGNIS_CHECK(span <= padded, ShapeError,
                "[{}] kernel size {}x{} (dilated {}) is larger than the padded input {}x{} "
                "(input {}, weight {})",
                op, weight.size(2), weight.size(3), span,
                input.size(2) + p.padding[0] + p.padding_end[0],
                input.size(3) + p.padding[1] + p.padding_end[1], shape_str(input.sizes()),
                shape_str(weight.sizes()));
    out[i] = conv_out_size(in, k, p.stride[i], p.padding[i], p.padding_end[i], p.dilation[i]);
  }
  return out;
}

void check_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Conv2dParams& p) {
  check_conv_common("conv2d", input, weight, bias, p.groups, weight.defined() ? weight.size(0) : 0);
  IGNIS_CHECK(p.padding[0] >= 0 && p.padding[1] >= 0 && p.padding_end[0] >= 0 &&
                  p.padding_end[1] >= 0,
              ValueError, "[conv2d] padding must be non-negative, got {}", pair_str(p.padding));
  const int64_t c = input.size(1), o = weight.size(0);
  IGNIS_CHECK(c % p.groups == 0 && o % p.groups == 0, ValueError,
              "[conv2d] groups = {} must divide both the input channels ({}) and the output "
              "channels ({})",
              p.groups, c, o);
  IGNIS_CHECK(weight.size(1) * p.groups == c, ShapeError,
              "[conv2d] input {} has {} channels, but weight {} with groups = {} expects {}",
              shape_str(input.sizes()), c, shape_str(weight.sizes()), p.groups,
              weight.size(1) * p.groups);
}

/// The same layout decision for every tensor of one call: channels-last iff the input is.
struct Prepared {
  bool cl;
  DType cd;
};
/// bfloat16 convolutions on the CPU run in bfloat16 (oneDNN's bf16 kernels accumulate in
/// float and round once; src/cpu/dnnl_conv.cpp), and bfloat16 and float16 ones on CUDA in
/// their own dtype (cuDNN's tensor-core kernels, float accumulation; src/cuda/cudnn_conv.cpp);
/// float16 on the CPU computes in float32.
Prepared prepare(const char* op, const Tensor& input) {
  const DType t = input.dtype();
  const bool native = t == kBFloat16 || (t == kFloat16 && input.is_cuda());
  const DType cd = native ? t : nn_compute_dtype(op, t);
  return {is_channels_last(input), cd};
}

/// conv2d's layout: channels-last when the user chose it for the input or the weight (either
/// one's strides suggest it, PyTorch's rule for cuDNN and oneDNN), else the backend's
/// preference (Note [Preferred conv layout], src/ops/nn_kernels.h). Forward and backward take
/// the same decision, so gradients arrive in the forward's layout.
Prepared prepare_conv2d(const Tensor& input, const Tensor& weight, const Conv2dParams& p) {
  Prepared pr = prepare("conv2d", input);
  if (pr.cl || input.dim() != 4 || weight.dim() != 4) return pr;
  pr.cl = input.suggest_memory_format() == MemoryFormat::channels_last ||
          weight.suggest_memory_format() == MemoryFormat::channels_last;
  const DeviceType type = input.device().type;
  if (!pr.cl && conv2d_prefers_channels_last.has(type))
    pr.cl = conv2d_prefers_channels_last.get(input.device())(
        {pr.cd, p.groups, input.size(1), weight.size(0), input.size(2), input.size(3)});
  return pr;
}

/// An activation operand in the call's layout. A tensor that is channels-last-contiguous by
/// PyTorch's rule (C = 1, or H = W = 1: also NCHW-contiguous) is already in NHWC memory
/// order; it gets NHWC's own strides as a view, without a copy, because oneDNN matches its
/// NHWC kernels by exact strides: given the NCHW strides of the small CNN's [128, 1, 28, 28]
/// batch, a training step took 11-14 s instead of 0.15-0.5 s (one thread, busy machine).
Tensor activation_operand(const Tensor& t, const Prepared& pr) {
  if (pr.cl && t.dtype() == pr.cd && t.is_contiguous(MemoryFormat::channels_last))
    return make_view(t, t.sizes(), channels_last_strides(t.sizes()), t.storage_offset());
  return to_layout(t, pr.cd, pr.cl);
}

/// The weight in the compute dtype and its own layout, channels-last or contiguous: kernels
/// take either, so a model converted with Module::to(channels_last) is never copied back.
Tensor weight_operand(const Tensor& w, DType cd) {
  return is_channels_last(w) ? to_layout(w, cd, true) : maybe_contiguous(w, cd);
}

/// The convolution whose adjoint is the transposed convolution: it maps the transposed
/// output [N, Cout, Ho, Wo] back to its input [N, Cin, H, W].
Conv2dParams adjoint_params(const ConvTranspose2dParams& p) {
  Conv2dParams c;
  c.stride = p.stride;
  c.padding = p.padding;
  // Rows added by output_padding are read by no output of the forward convolution.
  c.padding_end = {p.padding[0] - p.output_padding[0], p.padding[1] - p.output_padding[1]};
  c.dilation = p.dilation;
  c.groups = p.groups;
  return c;
}

Shape conv_transpose_output_shape(const Tensor& input, const Tensor& weight,
                                  const ConvTranspose2dParams& p) {
  const char* op = "conv_transpose2d";
  check_conv_common(op, input, weight, Tensor(), p.groups, 0);
  check_positive(op, "stride", p.stride);
  check_positive(op, "dilation", p.dilation);
  IGNIS_CHECK(p.padding[0] >= 0 && p.padding[1] >= 0 && p.output_padding[0] >= 0 &&
                  p.output_padding[1] >= 0,
              ValueError, "[{}] padding and output_padding must be non-negative, got {} and {}",
              op, pair_str(p.padding), pair_str(p.output_padding));
  for (int i = 0; i < 2; ++i)
    IGNIS_CHECK(p.output_padding[i] < p.stride[i] || p.output_padding[i] < p.dilation[i],
                ValueError,
                "[{}] output padding must be smaller than either stride or dilation, got "
                "output_padding {}, stride {}, dilation {}",
                op, pair_str(p.output_padding), pair_str(p.stride), pair_str(p.dilation));
  const int64_t cin = input.size(1);
  IGNIS_CHECK(weight.size(0) == cin, ShapeError,
              "[{}] input {} has {} channels, but weight {} expects {} (weight is [C_in, "
              "C_out / groups, kH, kW])",
              op, shape_str(input.sizes()), cin, shape_str(weight.sizes()), weight.size(0));
  IGNIS_CHECK(cin % p.groups == 0, ValueError,
              "[{}] groups = {} must divide the input channels ({})", op, p.groups, cin);
  Shape out{input.size(0), weight.size(1) * p.groups, 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = (input.size(2 + i) - 1) * p.stride[i] - 2 * p.padding[i] +
                 p.dilation[i] * (weight.size(2 + i) - 1) + p.output_padding[i] + 1;
    IGNIS_CHECK(out[2 + i] > 0, ShapeError,
                "[{}] input {} with weight {} gives a non-positive output size {}x{}", op,
                shape_str(input.sizes()), shape_str(weight.sizes()), out[2], out[3]);
  }
  return out;
}

void check_grad_shape(const char* op, const Tensor& grad_out, const Shape& expect) {
  IGNIS_CHECK(grad_out.defined() && grad_out.sizes() == expect, ShapeError,
              "[{}] expected grad_out of shape {}, got {}", op, shape_str(expect),
              grad_out.defined() ? shape_str(grad_out.sizes()) : std::string("undefined"));
}

Tensor bias_grad(const Tensor& grad_out) { return ignis::sum(grad_out, {0, 2, 3}); }

}  // namespace

Conv2dParams conv2d_params(Pair2 stride, Pair2 padding, Pair2 dilation, int64_t groups) {
  return {stride, padding, padding, dilation, groups};
}

Conv2dParams conv2d_params(Pair2 stride, const std::string& padding, Pair2 dilation,
                           int64_t groups, Pair2 kernel) {
  if (padding == "valid") return conv2d_params(stride, Pair2{0, 0}, dilation, groups);
  IGNIS_CHECK(padding == "same", ValueError,
              "[conv2d] padding must be \"valid\", \"same\" or numbers, got \"{}\"", padding);
  IGNIS_CHECK(stride[0] == 1 && stride[1] == 1, ValueError,
              "[conv2d] padding=\"same\" is not supported for strided convolutions (stride {})",
              pair_str(stride));
  Conv2dParams p = conv2d_params(stride, Pair2{0, 0}, dilation, groups);
  for (int i = 0; i < 2; ++i) {
    const int64_t total = dilation[i] * (kernel[i] - 1);
    p.padding[i] = total / 2;
    p.padding_end[i] = total - total / 2;  // the odd extra goes at the end, as PyTorch
  }
  return p;
}

Conv2dParams conv2d_params(const Conv2dOptions& o, const Tensor& weight) {
  if (o.padding_mode.empty()) return conv2d_params(o.stride, o.padding, o.dilation, o.groups);
  const bool w4 = weight.dim() == 4;
  return conv2d_params(o.stride, o.padding_mode, o.dilation, o.groups,
                       Pair2{w4 ? weight.size(2) : 1, w4 ? weight.size(3) : 1});
}

Tensor conv2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p, bool relu) {
  check_conv2d(input, weight, bias, p);
  const Pair2 hw = conv_output_hw("conv2d", input, weight, p);
  const Prepared pr = prepare_conv2d(input, weight, p);
  Tensor out = empty_in_layout({input.size(0), weight.size(0), hw[0], hw[1]}, pr.cd,
                               input.device(), pr.cl);
  if (out.numel() == 0) return out.to(input.dtype());
  NoGradGuard plain;  // the in-place ReLU below is part of this op, not a node of its own
  if (input.size(1) == 0) {  // an empty sum: bias only
    out.zero_();
    if (bias.defined()) out.add_(bias.to(pr.cd).view({1, -1, 1, 1}));
    if (relu) out.relu_();
    return out.to(input.dtype());
  }
  const Tensor x = activation_operand(input, pr), w = weight_operand(weight, pr.cd),
               b = maybe_contiguous(bias, pr.cd);
  const Device d = input.device();
  const bool fused = relu && conv2d_relu_forward_kernel.has(d.type) &&
                     conv2d_relu_forward_kernel.get(d)(x, w, b, out, p);
  if (!fused) {
    conv2d_forward_kernel.get(d)(x, w, b, out, p);
    if (relu) out.relu_();
  }
  return out.to(input.dtype());
}

ConvGrads conv2d_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                          const Conv2dParams& p, ConvNeed need,
                          const GradientDestination* weight_out) {
  check_conv2d(input, weight, Tensor(), p);
  const Pair2 hw = conv_output_hw("conv2d", input, weight, p);
  check_grad_shape("conv2d", grad_out, {input.size(0), weight.size(0), hw[0], hw[1]});
  check_same_dtype_device("conv2d", input, {{"grad_out", &grad_out}});
  const Prepared pr = prepare_conv2d(input, weight, p);
  const Tensor g = activation_operand(grad_out, pr);
  const bool empty = g.numel() == 0 || input.numel() == 0;
  ConvGrads r;
  if (need.input) {
    r.input = empty_in_layout(input.sizes(), pr.cd, input.device(), pr.cl);
    if (empty)
      r.input.zero_();
    else
      conv2d_backward_input_kernel.get(input.device())(g, weight_operand(weight, pr.cd), r.input,
                                                       p);
    r.input = r.input.to(input.dtype());
  }
  if (need.weight) {
    const bool channels_last = is_channels_last(weight);
    // The engine offers a destination only for a leaf weight, with its sizes and device
    // (Note [Gradient destinations]); what is left to check is what this kernel would write:
    // the compute dtype and layout, and on a GPU the alignment of a fresh allocation, so that
    // cuDNN's choice of kernel is the same as without it (oneDNN's reorder writes anywhere).
    const Tensor* out = weight_out ? &weight_out->tensor : nullptr;
    const bool aligned = weight.device().is_cpu() ||
                         (out && reinterpret_cast<uintptr_t>(out->data_ptr()) % 256 == 0);
    const bool into_out = out && aligned && out->dtype() == pr.cd &&
                          (channels_last ? is_channels_last(*out) : out->is_contiguous());
    r.weight = into_out ? *out
                        : empty_in_layout(weight.sizes(), pr.cd, weight.device(), channels_last);
    Tensor gb = need.bias ? make_tensor({weight.size(0)}, pr.cd, weight.device()) : Tensor();
    if (empty) {
      r.weight.zero_();
      if (gb.defined()) gb = bias_grad(g);
    } else {
      conv2d_backward_weight_kernel.get(input.device())(g, activation_operand(input, pr),
                                                        r.weight, gb, p);
    }
    if (into_out && weight_out->scale != 1) r.weight.mul_(weight_out->scale);
    r.weight = r.weight.to(weight.dtype());
    if (gb.defined()) r.bias = gb.to(input.dtype());
  } else if (need.bias) {
    r.bias = bias_grad(g).to(input.dtype());
  }
  return r;
}

Tensor conv_transpose2d_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                const ConvTranspose2dParams& p) {
  const Shape shape = conv_transpose_output_shape(input, weight, p);
  check_conv_common("conv_transpose2d", input, weight, bias, p.groups, shape[1]);
  const Prepared pr = prepare("conv_transpose2d", input);
  Tensor out = empty_in_layout(shape, pr.cd, input.device(), pr.cl);
  if (out.numel() == 0) return out.to(input.dtype());
  if (input.numel() == 0 || weight.numel() == 0)
    out.zero_();
  else
    conv2d_backward_input_kernel.get(input.device())(to_layout(input, pr.cd, pr.cl),
                                                     weight_operand(weight, pr.cd), out,
                                                     adjoint_params(p));
  if (bias.defined()) out.add_(bias.to(pr.cd).view({1, -1, 1, 1}));
  return out.to(input.dtype());
}

ConvGrads conv_transpose2d_backward(const Tensor& grad_out, const Tensor& input,
                                    const Tensor& weight, const ConvTranspose2dParams& p,
                                    ConvNeed need) {
  const Shape shape = conv_transpose_output_shape(input, weight, p);
  check_grad_shape("conv_transpose2d", grad_out, shape);
  check_same_dtype_device("conv_transpose2d", input, {{"grad_out", &grad_out}});
  const Prepared pr = prepare("conv_transpose2d", input);
  const Tensor g = to_layout(grad_out, pr.cd, pr.cl);
  const Conv2dParams cp = adjoint_params(p);
  const bool empty = g.numel() == 0 || input.numel() == 0;
  ConvGrads r;
  if (need.input) {
    // The adjoint of the adjoint: the forward convolution applied to grad_out.
    r.input = empty_in_layout(input.sizes(), pr.cd, input.device(), pr.cl);
    if (empty)
      r.input.zero_();
    else
      conv2d_forward_kernel.get(input.device())(g, weight_operand(weight, pr.cd), Tensor(),
                                                r.input, cp);
    r.input = r.input.to(input.dtype());
  }
  if (need.weight) {
    // Weight gradient of the convolution whose input is grad_out and whose output is input.
    r.weight = empty_in_layout(weight.sizes(), pr.cd, weight.device(), is_channels_last(weight));
    if (empty)
      r.weight.zero_();
    else
      conv2d_backward_weight_kernel.get(input.device())(to_layout(input, pr.cd, pr.cl), g,
                                                        r.weight, Tensor(), cp);
    r.weight = r.weight.to(weight.dtype());
  }
  if (need.bias) r.bias = bias_grad(g).to(input.dtype());
  return r;
}

}  // namespace ignis::detail
