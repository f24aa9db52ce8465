// Front ends of batch, layer and group normalisation (forward and backward, no autograd
// recording): PyTorch's argument checks and messages, statistics shapes, layout and dtype
// handling, running-statistics write-back, then one call to the slots of
// src/ops/nn_kernels.h. Layer and group norm share one "row norm" kernel.
#include "ignis/ops.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::detail {

namespace {

void check_param(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  if (!t.defined()) return;
  IGNIS_CHECK(t.sizes() == shape, ShapeError, "[{}] expected {} of shape {}, got {}", op, name,
              shape_str(shape), shape_str(t.sizes()));
}

int64_t spatial_size(const Tensor& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.size(d);
  return s;
}

/// Writes `computed` back into `target` when they are different tensors (a converted or
/// contiguous copy was used).
void write_back(const Tensor& target, const Tensor& computed) {
  if (target.defined() && target.impl() != computed.impl()) Tensor(target).copy_(computed);
}

/// Batch norm's weight and bias have the input's dtype or `param`, the dtype the kernels read
/// them in (float32 for a 16-bit input: Note [Batch norm on 16-bit inputs]).
void check_bn_param_dtype(const char* op, const Tensor& input, DType param,
                          std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  for (const auto& [name, t] : ts) {
    if (!t->defined()) continue;
    IGNIS_CHECK(t->dtype() == input.dtype() || t->dtype() == param, DTypeError,
                "[{}] expected {} to have the input's dtype {} or {}, got {}", op, name,
                dtype_name(input.dtype()), dtype_name(param), dtype_name(t->dtype()));
    IGNIS_CHECK(t->device() == input.device(), DeviceError,
                "[{}] expected {} on the input's device {}, got {}", op, name,
                input.device().str(), t->device().str());
  }
}

Tensor grad_in_layout(const char* op, const Tensor& grad_out, const Tensor& input, DType cd,
                      bool cl) {
  IGNIS_CHECK(grad_out.defined() && grad_out.sizes() == input.sizes(), ShapeError,
              "[{}] expected grad_out of the input's shape {}, got {}", op,
              shape_str(input.sizes()),
              grad_out.defined() ? shape_str(grad_out.sizes()) : std::string("undefined"));
  check_same_dtype_device(op, input, {{"grad_out", &grad_out}});
  return to_layout(grad_out, cd, cl);
}

}  // namespace

NormResult batch_norm_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Tensor& running_mean, const Tensor& running_var,
                              bool training, double momentum, double eps,
                              BnEpilogue epilogue, const Tensor& residual) {
  const char* op = epilogue == BnEpilogue::None      ? "batch_norm"
                   : epilogue == BnEpilogue::Relu    ? "batch_norm_relu"
                   : epilogue == BnEpilogue::AddRelu ? "batch_norm_add_relu"
                                                     : "batch_norm_gelu";
  check_same_dtype_device(op, input, {{"residual", &residual}});
  IGNIS_CHECK(residual.defined() == (epilogue == BnEpilogue::AddRelu), ValueError,
              "[{}] a residual is given exactly when the epilogue adds one", op);
  if (residual.defined())
    IGNIS_CHECK(residual.sizes() == input.sizes(), ShapeError,
                "[{}] expected a residual of the input's shape {}, got {}", op,
                shape_str(input.sizes()), shape_str(residual.sizes()));
  // The kernels take 16-bit inputs as they are, with float32 parameters and statistics.
  const DType pd = nn_compute_dtype(op, input.dtype()), cd = input.dtype();
  check_bn_param_dtype(op, input, pd, {{"weight", &weight}, {"bias", &bias}});
  IGNIS_CHECK(input.dim() >= 2, ShapeError, "[{}] expected an input [N, C, ...] with at least 2 "
              "dimensions, got shape {}", op, shape_str(input.sizes()));
  const int64_t C = input.size(1);
  check_param(op, "weight", weight, {C});
  check_param(op, "bias", bias, {C});
  check_param(op, "running_mean", running_mean, {C});
  check_param(op, "running_var", running_var, {C});
  IGNIS_CHECK(running_mean.defined() == running_var.defined(), ValueError,
              "[{}] running_mean and running_var must both be given or both be absent", op);
  const int64_t N = input.size(0), S = spatial_size(input);
  if (training)
    IGNIS_CHECK(N * S > 1, ValueError,
                "[{}] expected more than 1 value per channel when training, got input size {}",
                op, shape_str(input.sizes()));
  else
    IGNIS_CHECK(running_mean.defined(), ValueError,
                "[{}] running_mean and running_var are required in eval mode", op);
  const bool cl = is_channels_last(input);
  BatchNormArgs a;
  a.input = to_layout(input, cd, cl);
  a.output = empty_in_layout(input.sizes(), cd, input.device(), cl);
  a.weight = maybe_contiguous(weight, pd);
  a.bias = maybe_contiguous(bias, pd);
  if (residual.defined()) a.residual = to_layout(residual, cd, cl);
  a.epilogue = epilogue;
  a.n = N, a.c = C, a.s = S;
  a.training = training, a.momentum = momentum, a.eps = eps;
  if (training) {
    a.running_mean = maybe_contiguous(running_mean, pd);
    a.running_var = maybe_contiguous(running_var, pd);
    a.save_mean = make_tensor({C}, pd, input.device());
    a.save_invstd = make_tensor({C}, pd, input.device());
  } else {
    // Eval: the running statistics are the (constant) statistics.
    a.save_mean = running_mean.to(pd, /*copy=*/true).contiguous();
    a.save_invstd = rsqrt(running_var.to(pd) + eps).contiguous();
  }
  if (input.numel() > 0) batch_norm_forward_kernel.get(input.device())(a);
  if (training) {
    write_back(running_mean, a.running_mean);
    write_back(running_var, a.running_var);
  }
  return {a.output, a.save_mean, a.save_invstd};
}

NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                              const Tensor& save_mean, const Tensor& save_invstd, bool training,
                              BnEpilogue epilogue, const Tensor& output, bool want_residual,
                              const Tensor& bias) {
  const char* op = "batch_norm_backward";
  const bool masked = epilogue == BnEpilogue::Relu || epilogue == BnEpilogue::AddRelu;
  IGNIS_CHECK(!masked || output.defined(), ValueError,
              "[{}] the ReLU epilogue needs the forward's output", op);
  IGNIS_CHECK(!want_residual || epilogue == BnEpilogue::AddRelu, ValueError,
              "[{}] a residual gradient needs the AddRelu epilogue", op);
  const DType pd = nn_compute_dtype(op, input.dtype()), cd = input.dtype();
  check_bn_param_dtype(op, input, pd, {{"weight", &weight}, {"bias", &bias}});
  IGNIS_CHECK(input.dim() >= 2, ShapeError, "[{}] expected an input [N, C, ...], got shape {}",
              op, shape_str(input.sizes()));
  const int64_t C = input.size(1);
  check_param(op, "weight", weight, {C});
  check_param(op, "bias", bias, {C});
  IGNIS_CHECK(save_mean.defined() && save_invstd.defined(), ValueError,
              "[{}] save_mean and save_invstd are required", op);
  check_param(op, "save_mean", save_mean, {C});
  check_param(op, "save_invstd", save_invstd, {C});
  const bool cl = is_channels_last(input);
  BatchNormBackwardArgs a;
  a.grad_out = grad_in_layout(op, grad_out, input, cd, cl);
  a.input = to_layout(input, cd, cl);
  a.weight = maybe_contiguous(weight, pd);
  a.save_mean = maybe_contiguous(save_mean, pd);
  a.save_invstd = maybe_contiguous(save_invstd, pd);
  a.grad_input = empty_in_layout(input.sizes(), cd, input.device(), cl);
  a.grad_weight = make_tensor({C}, pd, input.device());
  a.grad_bias = make_tensor({C}, pd, input.device());
  if (epilogue == BnEpilogue::Gelu) a.bias = maybe_contiguous(bias, pd);
  if (masked) {
    IGNIS_CHECK(output.sizes() == input.sizes(), ShapeError,
                "[{}] expected the forward's output of the input's shape {}, got {}", op,
                shape_str(input.sizes()), shape_str(output.sizes()));
    a.output = to_layout(output, cd, cl);
  }
  if (want_residual) a.grad_residual = empty_in_layout(input.sizes(), cd, input.device(), cl);
  a.epilogue = epilogue;
  a.n = input.size(0), a.c = C, a.s = spatial_size(input);
  a.training = training;
  if (input.numel() > 0) {
    batch_norm_backward_kernel.get(input.device())(a);
  } else {
    a.grad_weight.zero_();
    a.grad_bias.zero_();
  }
  NormGrads r{a.grad_input, Tensor(), Tensor(), Tensor()};
  if (weight.defined()) r.weight = a.grad_weight.to(weight.dtype()), r.bias = a.grad_bias.to(weight.dtype());
  if (want_residual) r.residual = a.grad_residual;
  return r;
}

namespace {

/// Rows and columns of a layer norm over normalized_shape, after checking it.
std::pair<int64_t, int64_t> layer_norm_rows(const char* op, const Tensor& input,
                                            const Shape& ns) {
  IGNIS_CHECK(!ns.empty(), ValueError, "[{}] normalized_shape must not be empty", op);
  const int64_t axis = input.dim() - int64_t(ns.size());
  bool ok = axis >= 0;
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = input.size(axis + int64_t(i)) == ns[i];
  IGNIS_CHECK(ok, ShapeError, "[{}] expected input with shape [*, {}], but got input of shape {}",
              op, shape_str(ns).substr(1, shape_str(ns).size() - 2), shape_str(input.sizes()));
  const int64_t cols = shape_numel(ns);
  return {cols == 0 ? 0 : input.numel() / cols, cols};
}

Shape stats_shape(const Tensor& input, size_t normalized_dims) {
  Shape s(input.sizes().begin(), input.sizes().end() - int64_t(normalized_dims));
  s.insert(s.end(), normalized_dims, 1);
  return s;
}

/// Group norm: rows = N * groups, cols = C / groups * spatial.
void check_group_norm(const char* op, const Tensor& input, int64_t groups, const Tensor& weight,
                      const Tensor& bias) {
  IGNIS_CHECK(input.dim() >= 2, ShapeError, "[{}] expected an input [N, C, ...], got shape {}",
              op, shape_str(input.sizes()));
  IGNIS_CHECK(groups > 0 && input.size(1) % groups == 0, ValueError,
              "[{}] expected number of channels in input to be divisible by num_groups, but got "
              "input of shape {} and num_groups = {}",
              op, shape_str(input.sizes()), groups);
  check_param(op, "weight", weight, {input.size(1)});
  check_param(op, "bias", bias, {input.size(1)});
}

}  // namespace

NormResult layer_norm_forward(const Tensor& input, const Shape& normalized_shape,
                              const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "layer_norm";
  check_same_dtype_device(op, input, {{"weight", &weight}, {"bias", &bias}});
  const DType cd = nn_compute_dtype(op, input.dtype());
  const auto [rows, cols] = layer_norm_rows(op, input, normalized_shape);
  check_param(op, "weight", weight, normalized_shape);
  check_param(op, "bias", bias, normalized_shape);
  RowNormArgs a;
  a.input = input.to(cd).contiguous();
  a.output = make_tensor(input.sizes(), cd, input.device());
  a.weight = maybe_contiguous(weight, cd);
  a.bias = maybe_contiguous(bias, cd);
  const Shape ss = stats_shape(input, normalized_shape.size());
  a.mean = make_tensor(ss, cd, input.device());
  a.invstd = make_tensor(ss, cd, input.device());
  a.rows = rows, a.cols = cols, a.eps = eps;
  if (rows > 0 && cols > 0) row_norm_forward_kernel.get(input.device())(a);
  return {a.output.to(input.dtype()), a.mean, a.invstd};
}

NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                              const Shape& normalized_shape, const Tensor& save_mean,
                              const Tensor& save_invstd, const Tensor& weight) {
  const char* op = "layer_norm_backward";
  const DType cd = nn_compute_dtype(op, input.dtype());
  const auto [rows, cols] = layer_norm_rows(op, input, normalized_shape);
  check_param(op, "weight", weight, normalized_shape);
  const Shape ss = stats_shape(input, normalized_shape.size());
  check_param(op, "save_mean", save_mean, ss);
  check_param(op, "save_invstd", save_invstd, ss);
  RowNormBackwardArgs a;
  a.grad_out = grad_in_layout(op, grad_out, input, cd, false);
  a.input = input.to(cd).contiguous();
  a.weight = maybe_contiguous(weight, cd);
  a.mean = maybe_contiguous(save_mean, cd);
  a.invstd = maybe_contiguous(save_invstd, cd);
  a.grad_input = make_tensor(input.sizes(), cd, input.device());
  if (weight.defined()) {
    a.grad_weight = zeros(normalized_shape, TensorOptions(cd, input.device()));
    a.grad_bias = zeros(normalized_shape, TensorOptions(cd, input.device()));
  }
  a.rows = rows, a.cols = cols;
  if (rows > 0 && cols > 0) row_norm_backward_kernel.get(input.device())(a);
  NormGrads r{a.grad_input.to(input.dtype()), a.grad_weight, a.grad_bias, Tensor()};
  if (weight.defined()) r.weight = r.weight.to(weight.dtype()), r.bias = r.bias.to(weight.dtype());
  return r;
}

NormResult group_norm_forward(const Tensor& input, int64_t groups, const Tensor& weight,
                              const Tensor& bias, double eps) {
  const char* op = "group_norm";
  check_same_dtype_device(op, input, {{"weight", &weight}, {"bias", &bias}});
  const DType cd = nn_compute_dtype(op, input.dtype());
  check_group_norm(op, input, groups, weight, bias);
  const bool cl = is_channels_last(input);
  RowNormArgs a;
  a.input = input.to(cd).contiguous();
  a.output = make_tensor(input.sizes(), cd, input.device());
  a.weight = maybe_contiguous(weight, cd);
  a.bias = maybe_contiguous(bias, cd);
  const int64_t N = input.size(0);
  a.mean = make_tensor({N, groups}, cd, input.device());
  a.invstd = make_tensor({N, groups}, cd, input.device());
  a.groups = groups, a.channels_per_group = input.size(1) / groups, a.s = spatial_size(input);
  a.rows = N * groups, a.cols = a.channels_per_group * a.s, a.eps = eps;
  if (a.rows > 0 && a.cols > 0) row_norm_forward_kernel.get(input.device())(a);
  return {to_layout(a.output, input.dtype(), cl), a.mean, a.invstd};
}

NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& input, int64_t groups,
                              const Tensor& save_mean, const Tensor& save_invstd,
                              const Tensor& weight) {
  const char* op = "group_norm_backward";
  const DType cd = nn_compute_dtype(op, input.dtype());
  check_group_norm(op, input, groups, weight, Tensor());
  const int64_t N = input.size(0), C = input.size(1);
  check_param(op, "save_mean", save_mean, {N, groups});
  check_param(op, "save_invstd", save_invstd, {N, groups});
  const bool cl = is_channels_last(input);
  RowNormBackwardArgs a;
  a.grad_out = grad_in_layout(op, grad_out, input, cd, false);
  a.input = input.to(cd).contiguous();
  a.weight = maybe_contiguous(weight, cd);
  a.mean = maybe_contiguous(save_mean, cd);
  a.invstd = maybe_contiguous(save_invstd, cd);
  a.grad_input = make_tensor(input.sizes(), cd, input.device());
  if (weight.defined()) {
    a.grad_weight = zeros({C}, TensorOptions(cd, input.device()));
    a.grad_bias = zeros({C}, TensorOptions(cd, input.device()));
  }
  a.groups = groups, a.channels_per_group = C / groups, a.s = spatial_size(input);
  a.rows = N * groups, a.cols = a.channels_per_group * a.s;
  if (a.rows > 0 && a.cols > 0) row_norm_backward_kernel.get(input.device())(a);
  NormGrads r{to_layout(a.grad_input, input.dtype(), cl), a.grad_weight, a.grad_bias, Tensor()};
  if (weight.defined()) r.weight = r.weight.to(weight.dtype()), r.bias = r.bias.to(weight.dtype());
  return r;
}

}  // namespace ignis::detail
