// The per-element arithmetic of batch norm and of its fused epilogues (ReLU, residual add +
// ReLU, GELU), shared by the CPU loops (src/cpu/batch_norm.cpp) and the CUDA kernels
// (src/cuda/nn.cu) so both devices round the same values in the same order. The statistics
// reductions are the devices' own; src/ops/nn_kernels.h states the slots' contract.
// Note [Batch norm on 16-bit inputs]: a bf16 or float16 input (as autocast leaves a
// convolution's output) keeps its dtype: the output, the saved tensors and grad_input are
// 16-bit, while weight, bias, the running and saved statistics and the parameter gradients
// are float32 (BnParam). Every sum ends in double. The CUDA kernels take every term in
// double; the CPU loops compute the per-element terms (deviations, xhat, products,
// grad_input) of a 16-bit or float32 input in float and sum them in float over short runs
// (64 channels-last rows; at most 64 values per lane in NCHW) whose sums are added in
// double (src/cpu/batch_norm.cpp, LoopAcc; bf16 channels-last through src/cpu/batch_norm_bf16_rows.h):
// a short run's float sum (at most 64 roundings of ~2^-24 each) errs far less than the
// 16-bit rounding of the data and of grad_input (2^-8 for bf16, 2^-11 for float16), and
// keeps float32 accuracy for float32 data and the parameter gradients, while a float lane
// holds twice the values of a double one and needs no conversion. The mean is summed as
// offsets from a value of the channel, so data far from zero keeps its centre. float64
// inputs compute in double throughout.
#pragma once

#include "kernels/host_device.h"
#include "kernels/unary_ops.h"

namespace ignis::kernels {

/// The dtype of a batch norm's parameters and statistics for input storage type T: float for
/// the 16-bit floats (Note [Batch norm on 16-bit inputs]), T itself otherwise.
template <class T>
using BnParam = opmath_t<T>;

/// What a batch-norm pass does after normalising, without another pass over memory.
enum class BnEpilogue : uint8_t {
  None,     // y = x * scale + shift
  Relu,     // y = relu(x * scale + shift)
  AddRelu,  // y = relu(x * scale + shift + residual)
  Gelu,     // y = gelu(x * scale + shift), erf form
};

/// The epilogue applied to a normalised value y: the residual added (AddRelu), then ReLU,
/// which lets NaN through as relu does; or gelu's own function (Gelu).
template <BnEpilogue E, class T>
IGNIS_HOST_DEVICE T batch_norm_epilogue(T y, T residual) {
  if constexpr (E == BnEpilogue::Gelu) return Gelu{}(y);
  if constexpr (E == BnEpilogue::AddRelu) y = y + residual;
  if constexpr (E != BnEpilogue::None) y = (y > T(0) || is_nan(y)) ? y : T(0);
  return y;
}

/// One output element. scale = weight * invstd and shift = bias - mean * scale are folded per
/// channel; each step rounds to T as batch_norm, add and relu do one after the other, so the
/// fused op gives the unfused composition's values.
template <BnEpilogue E, class T>
IGNIS_HOST_DEVICE T batch_norm_output(T x, T scale, T shift, T residual) {
  return batch_norm_epilogue<E>(x * scale + shift, residual);
}

/// One output element of a 16-bit input S (bf16, float16) with float32 parameters: computed
/// in float and rounded to S once, except that with a residual or a GELU the normalised value
/// is first rounded to S, where the unfused batch_norm would have rounded it before add or
/// gelu.
template <BnEpilogue E, class S>
IGNIS_HOST_DEVICE S batch_norm_output_16(S x, float scale, float shift, S residual) {
  float y = float(x) * scale + shift;
  if constexpr (E == BnEpilogue::AddRelu || E == BnEpilogue::Gelu) y = float(S(y));
  return S(batch_norm_epilogue<E>(y, float(residual)));
}

/// The output gradient g carried back through the epilogue's ReLU: g where the saved output
/// y is positive, else 0 (relu_backward's rule). It is also the residual's gradient.
template <BnEpilogue E, class T>
IGNIS_HOST_DEVICE T batch_norm_masked_grad(T g, T y) {
  if constexpr (E == BnEpilogue::None) return g;
  else return y > T(0) ? g : T(0);
}

/// The output gradient g carried back through the GELU epilogue, in compute type T for
/// storage type S (float for the 16-bit S, else S itself): the normalised value z = x * scale
/// + shift recomputed as the forward computed it (rounded to S where the unfused batch_norm
/// stored it), then g * gelu'(z) with gelu'(z) and the product rounded to S, as gelu's
/// backward (mul(g, gelu_grad(z))) rounds them; so no pre-activation tensor is kept.
template <class S, class T>
IGNIS_HOST_DEVICE T batch_norm_gelu_grad(T g, T x, T scale, T shift) {
  const T z = T(S(x * scale + shift));
  const T d = T(S(GeluGrad{}(z)));
  return T(S(g * d));
}

/// The gradient reaching the normalised value through epilogue E at one element, in compute
/// type T for storage type S: g masked by the saved output y's sign (Relu, AddRelu), times
/// gelu'(z) for z recomputed from x with the forward's scale and shift (Gelu), or g itself.
/// y is read only by the ReLU epilogues, x, scale and shift only by Gelu.
template <BnEpilogue E, class S, class T>
IGNIS_HOST_DEVICE T batch_norm_epilogue_grad(T g, T x, T y, T scale, T shift) {
  if constexpr (E == BnEpilogue::Gelu)
    return batch_norm_gelu_grad<S>(g, x, scale, shift);
  else
    return batch_norm_masked_grad<E>(g, y);
}

/// The normalised input (x - mean) * invstd, in the backward loops' type A: double, or
/// float for a 16-bit input on the CPU (Note [Batch norm on 16-bit inputs]).
template <class A>
IGNIS_HOST_DEVICE A batch_norm_xhat(A x, A mean, A invstd) {
  return (x - mean) * invstd;
}

/// The input gradient k (g - mg - xhat mgx) for k = weight * invstd and the channel means
/// mg of g and mgx of g * xhat (both zero in eval mode, where the statistics are constants),
/// in the backward loops' type A.
template <class A>
IGNIS_HOST_DEVICE A batch_norm_grad_input(A g, A xhat, A k, A mg, A mgx) {
  return k * (g - mg - xhat * mgx);
}

}  // namespace ignis::kernels
