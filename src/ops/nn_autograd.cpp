// The public, differentiable convolution / pooling / normalisation functions of
// ignis/nn_ops.h: each runs the plain forward of src/ops/nn_ops.h and records its plain
// backward as the graph node. These backward nodes are first-order only (their formulas
// are kernels, not ignis ops), so create_graph through them is not supported yet.
#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "ignis/nn_ops.h"
#include "ignis/ops.h"
#include "ops/elementwise_grad.h"
#include "ops/nn_ops.h"

namespace ignis {

using namespace detail;
using Grads = std::vector<Tensor>;

namespace {
bool wants(const Tensor& t) { return t.defined() && t.requires_grad(); }
}  // namespace

namespace detail {
Tensor conv2d_node(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dOptions& o, bool relu) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return conv2d_node(autocast_low(input), autocast_low(weight), autocast_low(bias), o, relu);
  }
  const Conv2dParams p = conv2d_params(o, weight);
  Tensor out = conv2d_forward(input, weight, bias, p, relu);
  if (needs_grad({&input, &weight, &bias})) {
    const ConvNeed need{wants(input), wants(weight), wants(bias)};
    // With the ReLU, its mask comes from the saved output (as for linear + ReLU).
    record(relu ? "conv2d_relu" : "conv2d", {out}, {input, weight, bias},
           {save(input), save(weight), relu ? save_output(out) : SaveSpec{}},
           [p, need, relu](const Grads& g, const Grads& s) {
             const Tensor go = relu ? relu_backward(g[0], s[2]) : g[0];
             ConvGrads r = conv2d_backward(go, s[0], s[1], p, need, gradient_destination(1));
             return Grads{r.input, r.weight, r.bias};
           });
  }
  return out;
}
}  // namespace detail

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& o) {
  return detail::conv2d_node(input, weight, bias, o, /*relu=*/false);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& o) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return conv_transpose2d(autocast_low(input), autocast_low(weight), autocast_low(bias), o);
  }
  const ConvTranspose2dParams p{o.stride, o.padding, o.output_padding, o.dilation, o.groups};
  Tensor out = conv_transpose2d_forward(input, weight, bias, p);
  if (needs_grad({&input, &weight, &bias})) {
    const ConvNeed need{wants(input), wants(weight), wants(bias)};
    record("conv_transpose2d", {out}, {input, weight, bias}, {save(input), save(weight)},
           [p, need](const Grads& g, const Grads& s) {
             ConvGrads r = conv_transpose2d_backward(g[0], s[0], s[1], p, need);
             return Grads{r.input, r.weight, r.bias};
           });
  }
  return out;
}

namespace {
Pool2dParams pool_params(const Pool2dOptions& o) {
  return Pool2dParams{o.kernel_size, o.stride,           o.padding,         o.dilation,
                      o.ceil_mode,   o.count_include_pad, o.divisor_override};
}
}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Pool2dOptions& o) {
  const Pool2dParams p = pool_params(o);
  MaxPoolResult r = max_pool2d_forward(input, p);
  if (needs_grad({&input}))
    record("max_pool2d", {r.output, r.indices}, {input}, {save(input), save(r.indices)},
           [p](const Grads& g, const Grads& s) { return Grads{max_pool2d_backward(g[0], s[0], s[1], p)}; });
  return {r.output, r.indices};
}

Tensor max_pool2d(const Tensor& input, const Pool2dOptions& o) {
  return std::get<0>(max_pool2d_with_indices(input, o));
}

Tensor avg_pool2d(const Tensor& input, const Pool2dOptions& o) {
  const Pool2dParams p = pool_params(o);
  Tensor out = avg_pool2d_forward(input, p);
  if (needs_grad({&input}))
    record("avg_pool2d", {out}, {input}, {save(input)},
           [p](const Grads& g, const Grads& s) { return Grads{avg_pool2d_backward(g[0], s[0], p)}; });
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  Tensor out = adaptive_avg_pool2d_forward(input, output_size);
  if (needs_grad({&input}))
    record("adaptive_avg_pool2d", {out}, {input}, {save(input)},
           [](const Grads& g, const Grads& s) { return Grads{adaptive_avg_pool2d_backward(g[0], s[0])}; });
  return out;
}

namespace {
/// batch_norm as one graph node, alone (epilogue None) or with the ReLU (Relu), the residual
/// add and ReLU (AddRelu) or the GELU (Gelu) written in the same pass. No pre-activation
/// tensor is kept: the ReLU's mask is the saved output's sign, and the GELU's backward
/// recomputes the normalised value from the input, the statistics and the bias.
Tensor batch_norm_node(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum,
                       double eps, BnEpilogue epilogue, const Tensor& residual) {
  NormResult r;
  {
    // Running statistics are updated in place without recording (they are buffers).
    GradModeScope no_grad(false);
    r = batch_norm_forward(input, weight, bias, running_mean, running_var, training, momentum, eps,
                           epilogue, residual);
  }
  if (!needs_grad({&input, &weight, &bias, &residual})) return r.output;
  const bool relu = epilogue == BnEpilogue::Relu || epilogue == BnEpilogue::AddRelu;
  const bool gelu = epilogue == BnEpilogue::Gelu;
  const bool want_residual = wants(residual);
  const char* name = epilogue == BnEpilogue::AddRelu ? "batch_norm_add_relu"
                     : relu                          ? "batch_norm_relu"
                     : gelu                          ? "batch_norm_gelu"
                                                     : "batch_norm";
  record(name, {r.output}, {input, weight, bias, residual},
         {save(input), save(weight), save(r.save_mean), save(r.save_invstd),
          relu ? save_output(r.output) : SaveSpec{}, gelu ? save(bias) : SaveSpec{}},
         [training, epilogue, want_residual](const Grads& g, const Grads& s) {
           NormGrads n = batch_norm_backward(g[0], s[0], s[1], s[2], s[3], training, epilogue,
                                             s[4], want_residual, s[5]);
           return Grads{n.input, n.weight, n.bias, n.residual};
         });
  return r.output;
}
}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  // Not on an autocast list, as in PyTorch: a bf16/float16 input is normalised in its own
  // dtype with float32 parameters and statistics (Note [Batch norm on 16-bit inputs]), so a
  // convolution's 16-bit output reaches the next convolution without two casts.
  return batch_norm_node(input, running_mean, running_var, weight, bias, training, momentum, eps,
                         BnEpilogue::None, Tensor());
}

Tensor batch_norm_relu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum,
                       double eps, const Tensor& residual) {
  // Not on an autocast list, as batch_norm. Mixed input and residual dtypes promote in add;
  // the kernels take one dtype for both, so such a call composes the ops.
  if (residual.defined() && input.defined() && residual.dtype() != input.dtype())
    return relu(add(batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                               eps),
                    residual));
  return batch_norm_node(input, running_mean, running_var, weight, bias, training, momentum, eps,
                         residual.defined() ? BnEpilogue::AddRelu : BnEpilogue::Relu, residual);
}

Tensor batch_norm_gelu(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum,
                       double eps) {
  // Not on an autocast list, as batch_norm (gelu is on neither).
  return batch_norm_node(input, running_mean, running_var, weight, bias, training, momentum, eps,
                         BnEpilogue::Gelu, Tensor());
}

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return layer_norm(autocast_fp32(input), normalized_shape, autocast_fp32(weight),
                      autocast_fp32(bias), eps);
  }
  NormResult r = layer_norm_forward(input, normalized_shape, weight, bias, eps);
  if (needs_grad({&input, &weight, &bias}))
    record("layer_norm", {r.output}, {input, weight, bias},
           {save(input), save(weight), save(r.save_mean), save(r.save_invstd)},
           [normalized_shape](const Grads& g, const Grads& s) {
             NormGrads n = layer_norm_backward(g[0], s[0], normalized_shape, s[2], s[3], s[1]);
             return Grads{n.input, n.weight, n.bias};
           });
  return r.output;
}

Tensor group_norm(const Tensor& input, int64_t groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (autocast_pending()) {  // Note [Autocast applies once]
    AutocastApplied once;
    return group_norm(autocast_fp32(input), groups, autocast_fp32(weight), autocast_fp32(bias), eps);
  }
  NormResult r = group_norm_forward(input, groups, weight, bias, eps);
  if (needs_grad({&input, &weight, &bias}))
    record("group_norm", {r.output}, {input, weight, bias},
           {save(input), save(weight), save(r.save_mean), save(r.save_invstd)},
           [groups](const Grads& g, const Grads& s) {
             NormGrads n = group_norm_backward(g[0], s[0], groups, s[2], s[3], s[1]);
             return Grads{n.input, n.weight, n.bias};
           });
  return r.output;
}

}  // namespace ignis
