// CUDA kernels of layer norm and group norm (row_norm_forward_kernel and
// row_norm_backward_kernel, src/ops/nn_kernels.h), the twins of the row norms in
// src/cpu/row_norm.cpp with the same per-element math (src/kernels/row_norm_math.h). The front end
// hands them contiguous float32 or float64 tensors viewed as [rows, cols] (16-bit inputs are
// converted to float32 there), so statistics accumulate in double as on the CPU.
//
// Forward: one block per row (at most 2^20 blocks, each then taking every 2^20-th row); the
// mean, then the sum of squared deviations (two passes over the row, as the CPU, avoiding
// E[x^2] - E[x]^2), each a block reduction (warp shuffles, then one slot per warp); then every
// thread writes its columns.
// Backward: one block per row for the input gradient (the two row means sg, sgx by block
// reductions); the weight and bias gradients, sums over rows per affine index, by a second
// kernel: a thread per affine index over a chunk of rows, the chunks' partial sums added in
// chunk order by a third (deterministic, no atomics).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/tensor_impl.h"
#include "cuda/launch.cuh"
#include "cuda/nn_common.cuh"
#include "ignis/ops.h"
#include "kernels/row_norm_math.h"
#include "ops/nn_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::RowNormArgs;
using ignis::detail::RowNormBackwardArgs;
using kernels::AffineIndex;

/// Threads per row block: a multiple of 32, fewer for short rows.
unsigned row_threads(int64_t cols) {
  return unsigned(std::clamp<int64_t>((cols + 31) / 32 * 32, 32, 512));
}

/// Blocks of the row kernels: one per row up to 2^20, then each block takes several rows (a
/// grid's x extent stops at 2^31 - 1; a cast of more rows would silently drop some).
unsigned row_blocks(int64_t rows) { return unsigned(std::min<int64_t>(rows, int64_t(1) << 20)); }

template <class T>
__global__ void row_norm_forward_rows(
    const T* __restrict__ x,
    const T* __restrict__ w,
    const T* __restrict__ b,
    T* __restrict__ y,
    T* __restrict__ mean,
    T* __restrict__ invstd,
    int64_t rows,
    int64_t cols,
    AffineIndex ai,
    double eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // uniform across the block
    const T* xr = x + r * cols;
    double s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += double(xr[j]);
    const double m = block_sum(s) / double(cols);
    double v = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const double d = double(xr[j]) - m;
      v += d * d;
    }
    const double is = 1.0 / ::sqrt(block_sum(v) / double(cols) + eps);
    if (threadIdx.x == 0) mean[r] = T(m), invstd[r] = T(is);
    T* yr = y + r * cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const int64_t k = ai(r, j);
      yr[j] = T(kernels::row_norm_value(
          double(xr[j]), m, is, w ? double(w[k]) : 1.0, b ? double(b[k]) : 0.0));
    }
  }
}

template <class T>
void forward(const RowNormArgs& a) {
  LaunchOn on(a.input.device());
  const AffineIndex ai{a.groups, a.channels_per_group, a.s};
  row_norm_forward_rows<T><<<row_blocks(a.rows), row_threads(a.cols), 0, on.stream>>>(
      ptr<T>(a.input),
      ptr<T>(a.weight),
      ptr<T>(a.bias),
      ptr<T>(a.output),
      ptr<T>(a.mean),
      ptr<T>(a.invstd),
      a.rows,
      a.cols,
      ai,
      a.eps);
  IGNIS_CUDA_CHECK_LAUNCH("layer_norm");
}

/// The input gradient of row blockIdx.x (the statistics are the saved ones, read back as T,
/// as the CPU reads them).
template <class T>
__global__ void row_norm_backward_rows(
    const T* __restrict__ x,
    const T* __restrict__ g,
    const T* __restrict__ w,
    const T* __restrict__ mean,
    const T* __restrict__ invstd,
    T* __restrict__ gi,
    int64_t rows,
    int64_t cols,
    AffineIndex ai) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // uniform across the block
    const T *xr = x + r * cols, *gr = g + r * cols;
    const double m = double(mean[r]), is = double(invstd[r]);
    double sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const double gx = double(gr[j]) * (w ? double(w[ai(r, j)]) : 1.0);
      sg += gx;
      sgx += gx * ((double(xr[j]) - m) * is);
    }
    sg = block_sum(sg) / double(cols);
    sgx = block_sum(sgx) / double(cols);
    T* gir = gi + r * cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      gir[j] = T(kernels::row_norm_grad(
          double(xr[j]), double(gr[j]), w ? double(w[ai(r, j)]) : 1.0, m, is, sg, sgx));
  }
}

/// Partial sums of the weight gradient (g * xhat) and the bias gradient (g) of affine index
/// k over the samples [blockIdx.y * per_chunk, + per_chunk): for layer norm a sample is a row
/// and k its column; for group norm a sample is n, k a channel, and its values are the s
/// columns of that channel in row n * groups + k / cpg. Written to partial[chunk][k] and
/// partial[chunk][width + k].
template <class T>
__global__ void affine_grad_partial_kernel(
    const T* __restrict__ x,
    const T* __restrict__ g,
    const T* __restrict__ mean,
    const T* __restrict__ invstd,
    double* __restrict__ partial,
    int64_t samples,
    int64_t per_chunk,
    int64_t cols,
    int64_t width,
    AffineIndex ai) {
  const int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (k >= width) return;
  const int64_t n0 = int64_t(blockIdx.y) * per_chunk;
  const int64_t n1 = n0 + per_chunk < samples ? n0 + per_chunk : samples;
  double gw = 0, gb = 0;
  for (int64_t n = n0; n < n1; ++n) {
    // The row and the columns of (sample n, index k).
    const int64_t r = ai.groups == 0 ? n : n * ai.groups + k / ai.cpg;
    const int64_t j0 = ai.groups == 0 ? k : (k % ai.cpg) * ai.s;
    const int64_t j1 = ai.groups == 0 ? k + 1 : j0 + ai.s;
    const double m = double(mean[r]), is = double(invstd[r]);
    for (int64_t j = j0; j < j1; ++j) {
      const double gv = double(g[r * cols + j]);
      gw += gv * ((double(x[r * cols + j]) - m) * is);
      gb += gv;
    }
  }
  partial[int64_t(blockIdx.y) * 2 * width + k] = gw;
  partial[int64_t(blockIdx.y) * 2 * width + width + k] = gb;
}

/// out[k] = sum over chunks, in order, of partial[chunk][k] (k < 2 * width: weight then bias).
template <class T>
__global__ void affine_grad_sum_kernel(
    const double* __restrict__ partial,
    T* __restrict__ gw,
    T* __restrict__ gb,
    int64_t chunks,
    int64_t width) {
  const int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (k >= 2 * width) return;
  double s = 0;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c * 2 * width + k];
  if (k < width)
    gw[k] = T(s);
  else
    gb[k - width] = T(s);
}

template <class T>
void backward(const RowNormBackwardArgs& a) {
  LaunchOn on(a.input.device());
  const AffineIndex ai{a.groups, a.channels_per_group, a.s};
  row_norm_backward_rows<T><<<row_blocks(a.rows), row_threads(a.cols), 0, on.stream>>>(
      ptr<T>(a.input),
      ptr<T>(a.grad_out),
      ptr<T>(a.weight),
      ptr<T>(a.mean),
      ptr<T>(a.invstd),
      ptr<T>(a.grad_input),
      a.rows,
      a.cols,
      ai);
  // Checked before the allocation below: an out-of-memory there clears a pending launch error.
  IGNIS_CUDA_CHECK_LAUNCH("layer_norm_backward");
  if (a.grad_weight.defined()) {
    const int64_t width = ai.size(a.cols);
    const int64_t samples = a.groups == 0 ? a.rows : a.rows / a.groups;
    // Chunks of ~64 rows (layer norm) or ~4096 values per index (group norm), so that short
    // affine vectors still give many blocks; at most 65535 chunks (the grid's y limit).
    const int64_t values =
        a.groups == 0 ? 64 : std::max<int64_t>(1, 4096 / std::max<int64_t>(a.s, 1));
    const int64_t per_chunk = std::max<int64_t>(values, (samples + 65534) / 65535);
    const int64_t chunks = (samples + per_chunk - 1) / per_chunk;
    Tensor partial = empty({chunks, 2 * width}, TensorOptions(kFloat64, a.input.device()));
    const dim3 grid(unsigned((width + kThreads - 1) / kThreads), unsigned(chunks));
    affine_grad_partial_kernel<T><<<grid, kThreads, 0, on.stream>>>(
        ptr<T>(a.input),
        ptr<T>(a.grad_out),
        ptr<T>(a.mean),
        ptr<T>(a.invstd),
        partial.data_ptr<double>(),
        samples,
        per_chunk,
        a.cols,
        width,
        ai);
    IGNIS_CUDA_CHECK_LAUNCH("layer_norm_backward");
    affine_grad_sum_kernel<T>
        <<<unsigned((2 * width + kThreads - 1) / kThreads), kThreads, 0, on.stream>>>(
            partial.data_ptr<double>(), ptr<T>(a.grad_weight), ptr<T>(a.grad_bias), chunks, width);
  }
  IGNIS_CUDA_CHECK_LAUNCH("layer_norm_backward");
}

}  // namespace

void register_row_norm() {
  ignis::detail::row_norm_forward_kernel.set(DeviceType::CUDA, [](const RowNormArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { forward<T>(a); });
  });
  ignis::detail::row_norm_backward_kernel.set(DeviceType::CUDA, [](const RowNormBackwardArgs& a) {
    visit_float_or_double(a.input.dtype(), [&]<class T>() { backward<T>(a); });
  });
}

}  // namespace ignis::cuda::detail
