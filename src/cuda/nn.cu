// CUDA kernels of batch norm and 2-D pooling (slots in src/ops/nn_kernels.h), the twins of
// src/cpu/batch_norm.cpp and src/cpu/pool.cpp: the same windows, tie rules and precision (window
// sums and channel statistics in double), so the GPU agrees with the CPU to rounding. Batch
// norm's per-element formulas, with its ReLU / residual-add epilogues, are the CPU's own
// (src/kernels/batch_norm_math.h).
//   batch norm: blocks reduce chunks of a channel (two passes: mean, then squared
//     deviations; channels-last: chunks of a tile of 32 channels), a thread per channel
//     merges them, then one elementwise pass applies scale and shift per channel.
//   pooling: a thread per output element forward. The avg and adaptive backwards gather, a
//     thread per input element summing the outputs whose windows hold it in (oh, ow) order
//     as the CPU's scatter does (no atomics, no dependence on scheduling); max-pool's
//     backward scatters with atomics (its slot has the argmax indices but not the window).
//     Max pooling also runs on bf16/float16 elements as they are (no float32 copies).
// Threads walk tensors in their memory order (NCHW or channels-last) so loads coalesce.
// A bf16/float16 input stays 16-bit with float32 parameters and statistics (Note [Batch norm
// on 16-bit inputs]): elements are T, per-channel values BnParam<T>.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/tensor_impl.h"
#include "cuda/launch.cuh"
#include "cuda/nn_common.cuh"
#include "kernels/batch_norm_math.h"
#include "kernels/pool_windows.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::cuda::detail {

void register_conv();  // cudnn_conv.cpp

namespace {
using ignis::detail::BatchNormArgs;
using ignis::detail::BatchNormBackwardArgs;
using ignis::detail::Pool2dParams;
using kernels::BnEpilogue;
using kernels::BnParam;

// ---- batch norm ----------------------------------------------------------------------------
// x[n, c, s] at (n*C + c)*S + s (NCHW) or (n*S + s)*C + c (channels-last). A channel's N*S
// values are split into `splits` chunks, one block each, so that a few channels still fill
// the GPU; a second kernel merges each channel's chunks (Chan et al.'s pairwise update for
// mean and squared deviations, which keeps the CPU's two-pass accuracy).

struct ChannelView {
  int64_t n, c, s;
  bool cl;
  // Index arithmetic in I: uint32_t when the tensor has under 2^31 elements (a 64-bit
  // division costs several times a 32-bit one on the GPU), else int64_t.
  template <class I>
  __device__ __forceinline__ int64_t at(int64_t ch, int64_t k) const {  // k = n * S + s
    return cl ? int64_t(I(k) * I(c) + I(ch))
              : int64_t(((I(k) / I(s)) * I(c) + I(ch)) * I(s) + I(k) % I(s));
  }
  template <class I>
  __device__ __forceinline__ int64_t channel_of(int64_t i) const {
    return cl ? int64_t(I(i) % I(c)) : int64_t((I(i) / I(s)) % I(c));
  }
};

/// f.template operator()<E>() for the epilogue e (each kernel variant is straight-line code).
template <class F>
void with_epilogue(BnEpilogue e, const F& f) {
  switch (e) {
    case BnEpilogue::None: return f.template operator()<BnEpilogue::None>();
    case BnEpilogue::Relu: return f.template operator()<BnEpilogue::Relu>();
    case BnEpilogue::AddRelu: return f.template operator()<BnEpilogue::AddRelu>();
    case BnEpilogue::Gelu: return f.template operator()<BnEpilogue::Gelu>();
  }
}

/// kernels::batch_norm_epilogue_grad at element i of channel c, computed in BnParam<T> (the
/// saved output y and Gelu's refolded scale and shift are read only where E needs them).
template <BnEpilogue E, class T>
__device__ __forceinline__ T epilogue_grad(const T* g, const T* y, const T* x, int64_t i,
                                           int64_t c, const BnParam<T>* scale,
                                           const BnParam<T>* shift) {
  using P = BnParam<T>;
  constexpr bool kMask = E == BnEpilogue::Relu || E == BnEpilogue::AddRelu;
  constexpr bool kGelu = E == BnEpilogue::Gelu;
  return T(kernels::batch_norm_epilogue_grad<E, T>(P(g[i]), P(x[i]), kMask ? P(y[i]) : P(0),
                                                   kGelu ? scale[c] : P(0),
                                                   kGelu ? shift[c] : P(0)));
}

/// f.template operator()<I>() with the index type for a tensor of `total` elements.
template <class F>
void with_index_type(int64_t total, const F& f) {
  if (total <= INT32_MAX)
    f.template operator()<uint32_t>();
  else
    f.template operator()<int64_t>();
}

constexpr int kStatThreads = 256;

/// Chunks per channel: about 512 blocks in all, each of at least 2048 values.
int64_t splits_for(int64_t channels, int64_t count) {
  const int64_t by_blocks = std::max<int64_t>(1, 512 / std::max<int64_t>(channels, 1));
  const int64_t by_size = std::max<int64_t>(1, count / 2048);
  return std::min(by_blocks, by_size);
}

/// [begin, end) of chunk b of `splits` over count values.
__device__ __forceinline__ void chunk_range(
    int64_t count, int64_t splits, int64_t b, int64_t& begin, int64_t& end) {
  const int64_t per = (count + splits - 1) / splits;
  begin = min(b * per, count);
  end = min(begin + per, count);
}

/// Block (c, b): the count, mean and sum of squared deviations of chunk b of channel c
/// (two passes over the chunk, the second mostly from cache), at partial[(c*splits + b)*3].
template <class T, class I>
__global__ void batch_norm_partial_stats(
    const T* __restrict__ x, ChannelView v, int64_t splits, double* __restrict__ partial) {
  const int64_t c = blockIdx.x, b = blockIdx.y;
  int64_t begin, end;
  chunk_range(v.n * v.s, splits, b, begin, end);
  double s = 0;
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
    s += double(x[v.template at<I>(c, k)]);
  const double count = double(end - begin);
  const double total = block_sum(s), m = end > begin ? total / count : 0.0;
  double q = 0;
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
    const double d = double(x[v.template at<I>(c, k)]) - m;
    q += d * d;
  }
  q = block_sum(q);
  if (threadIdx.x != 0) return;
  double* out = partial + (c * splits + b) * 3;
  out[0] = count, out[1] = m, out[2] = q;
}

// Channels-last: a channel's values are C apart, so a block owns a tile of 32 neighbouring
// channels (threadIdx.x, one 128-byte line of float32 per row) and walks 8 rows at a time
// (threadIdx.y); the partial results have the NCHW kernels' layout.
constexpr int kTileChannels = 32, kTileRows = 8;
int64_t channel_tiles(int64_t channels) { return (channels + kTileChannels - 1) / kTileChannels; }

/// The sum over threadIdx.y of v, for this thread's column (every thread must call it).
__device__ __forceinline__ double column_sum(double v, double (&shared)[kTileRows][kTileChannels]) {
  __syncthreads();  // shared may still be read by a previous call
  shared[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  double r = 0;
  for (int k = 0; k < kTileRows; ++k) r += shared[k][threadIdx.x];
  return r;
}

template <class T, class I>
__global__ void batch_norm_partial_stats_cl(
    const T* __restrict__ x, ChannelView v, int64_t splits, double* __restrict__ partial) {
  __shared__ double shared[kTileRows][kTileChannels];
  const int64_t c = blockIdx.x * int64_t(kTileChannels) + threadIdx.x, b = blockIdx.y;
  const bool active = c < v.c;
  int64_t begin, end;
  chunk_range(v.n * v.s, splits, b, begin, end);
  double s = 0;
  if (active)
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows)
      s += double(x[v.template at<I>(c, r)]);
  const double count = double(end - begin);
  const double total = column_sum(s, shared), m = end > begin ? total / count : 0.0;
  double q = 0;
  if (active)
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows) {
      const double d = double(x[v.template at<I>(c, r)]) - m;
      q += d * d;
    }
  q = column_sum(q, shared);
  if (threadIdx.y != 0 || !active) return;
  double* out = partial + (c * splits + b) * 3;
  out[0] = count, out[1] = m, out[2] = q;
}

template <class T, class I, BnEpilogue E>
__global__ void batch_norm_partial_grads_cl(
    const T* __restrict__ x,
    const T* __restrict__ g,
    const T* __restrict__ y,
    ChannelView v,
    const BnParam<T>* mean,
    const BnParam<T>* invstd,
    const BnParam<T>* scale,
    const BnParam<T>* shift,
    int64_t splits,
    double* __restrict__ partial) {
  __shared__ double shared[kTileRows][kTileChannels];
  const int64_t c = blockIdx.x * int64_t(kTileChannels) + threadIdx.x, b = blockIdx.y;
  const bool active = c < v.c;
  int64_t begin, end;
  chunk_range(v.n * v.s, splits, b, begin, end);
  double sg = 0, sgx = 0;
  if (active) {
    const double m = double(mean[c]), is = double(invstd[c]);
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows) {
      const int64_t i = v.template at<I>(c, r);
      const double gm = double(epilogue_grad<E>(g, y, x, i, c, scale, shift));
      sg += gm;
      sgx += gm * kernels::batch_norm_xhat(double(x[i]), m, is);
    }
  }
  sg = column_sum(sg, shared);
  sgx = column_sum(sgx, shared);
  if (threadIdx.y != 0 || !active) return;
  partial[(c * splits + b) * 2] = sg;
  partial[(c * splits + b) * 2 + 1] = sgx;
}

/// Thread per channel: the merged statistics (in training: saved, and folded into the
/// running ones), then scale = invstd * w and shift = b - mean * scale for the apply pass.
template <class T>
__global__ void batch_norm_finish_stats(
    const double* __restrict__ partial,
    int64_t channels,
    int64_t splits,
    bool training,
    T* mean,
    T* invstd,
    T* rm,
    T* rv,
    const T* w,
    const T* b,
    double momentum,
    double eps,
    T* scale,
    T* shift) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= channels) return;
  if (training) {
    double n = 0, m = 0, q = 0;
    for (int64_t k = 0; k < splits; ++k) {
      const double* p = partial + (c * splits + k) * 3;
      if (p[0] == 0) continue;
      const double n2 = n + p[0], delta = p[1] - m;
      m += delta * p[0] / n2;
      q += p[2] + delta * delta * n * p[0] / n2;
      n = n2;
    }
    mean[c] = T(m);
    invstd[c] = T(1.0 / sqrt(q / n + eps));
    if (rm) rm[c] = T((1 - momentum) * double(rm[c]) + momentum * m);
    // The running variance is the unbiased one (count >= 2 was checked).
    if (rv) rv[c] = T((1 - momentum) * double(rv[c]) + momentum * q / (n - 1));
  }
  const double sc = double(invstd[c]) * (w ? double(w[c]) : 1.0);
  scale[c] = T(sc);
  shift[c] = T((b ? double(b[c]) : 0.0) - double(mean[c]) * sc);
}

template <class T, class I, BnEpilogue E>
__global__ void batch_norm_apply(
    const T* __restrict__ x,
    const T* __restrict__ residual,
    T* __restrict__ y,
    ChannelView v,
    const BnParam<T>* __restrict__ scale,
    const BnParam<T>* __restrict__ shift) {
  const int64_t total = v.n * v.c * v.s;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = v.template channel_of<I>(i);
    const T r = E == BnEpilogue::AddRelu ? residual[i] : T(0);
    if constexpr (std::is_same_v<BnParam<T>, T>)
      y[i] = kernels::batch_norm_output<E>(x[i], scale[c], shift[c], r);
    else  // Note [Batch norm on 16-bit inputs]
      y[i] = kernels::batch_norm_output_16<E>(x[i], scale[c], shift[c], r);
  }
}

unsigned channel_blocks(int64_t channels) { return unsigned((channels + kThreads - 1) / kThreads); }

template <class T, class I>
void batch_norm_forward(const BatchNormArgs& a) {
  using P = BnParam<T>;
  LaunchOn on(a.input.device());
  const ChannelView v{a.n, a.c, a.s, ignis::detail::batch_norm_walks_rows(a.input, a.s)};
  const int64_t splits = a.training ? splits_for(v.cl ? channel_tiles(a.c) : a.c, a.n * a.s) : 1;
  Tensor partial =
      ignis::detail::make_tensor({a.training ? a.c * splits * 3 : 1}, kFloat64, a.input.device());
  if (a.training && v.cl) {
    batch_norm_partial_stats_cl<T, I>
        <<<dim3(unsigned(channel_tiles(a.c)), unsigned(splits)),
           dim3(kTileChannels, kTileRows),
           0,
           on.stream>>>(ptr<T>(a.input), v, splits, ptr<double>(partial));
    IGNIS_CUDA_CHECK_LAUNCH("batch_norm");
  } else if (a.training) {
    batch_norm_partial_stats<T, I>
        <<<dim3(unsigned(a.c), unsigned(splits)), kStatThreads, 0, on.stream>>>(
            ptr<T>(a.input), v, splits, ptr<double>(partial));
    IGNIS_CUDA_CHECK_LAUNCH("batch_norm");
  }
  Tensor coef = ignis::detail::make_tensor({2 * a.c}, CppTypeToDType<P>::value, a.input.device());
  P* scale = ptr<P>(coef);
  batch_norm_finish_stats<P><<<channel_blocks(a.c), kThreads, 0, on.stream>>>(
      ptr<double>(partial),
      a.c,
      splits,
      a.training,
      ptr<P>(a.save_mean),
      ptr<P>(a.save_invstd),
      ptr<P>(a.running_mean),
      ptr<P>(a.running_var),
      ptr<P>(a.weight),
      ptr<P>(a.bias),
      a.momentum,
      a.eps,
      scale,
      scale + a.c);
  IGNIS_CUDA_CHECK_LAUNCH("batch_norm");
  with_epilogue(a.epilogue, [&]<BnEpilogue E>() {
    batch_norm_apply<T, I, E><<<grid_for(a.n * a.c * a.s, 4), kThreads, 0, on.stream>>>(
        ptr<T>(a.input), ptr<T>(a.residual), ptr<T>(a.output), v, scale, scale + a.c);
  });
  IGNIS_CUDA_CHECK_LAUNCH("batch_norm");
}

/// Block (c, b): the sums of g and g * xhat over chunk b of channel c, at partial[(c*splits+b)*2].
template <class T, class I, BnEpilogue E>
__global__ void batch_norm_partial_grads(
    const T* __restrict__ x,
    const T* __restrict__ g,
    const T* __restrict__ y,
    ChannelView v,
    const BnParam<T>* mean,
    const BnParam<T>* invstd,
    const BnParam<T>* scale,
    const BnParam<T>* shift,
    int64_t splits,
    double* __restrict__ partial) {
  const int64_t c = blockIdx.x, b = blockIdx.y;
  int64_t begin, end;
  chunk_range(v.n * v.s, splits, b, begin, end);
  const double m = double(mean[c]), is = double(invstd[c]);
  double sg = 0, sgx = 0;
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
    const int64_t i = v.template at<I>(c, k);
    const double gm = double(epilogue_grad<E>(g, y, x, i, c, scale, shift));
    sg += gm;
    sgx += gm * kernels::batch_norm_xhat(double(x[i]), m, is);
  }
  sg = block_sum(sg);
  sgx = block_sum(sgx);
  if (threadIdx.x != 0) return;
  partial[(c * splits + b) * 2] = sg;
  partial[(c * splits + b) * 2 + 1] = sgx;
}

/// Thread per channel: grad_weight = sum g * xhat, grad_bias = sum g, and the coefficients of
/// grad_input = k * (g - mg - xhat * mgx) (mg, mgx vanish in eval mode).
template <class T>
__global__ void batch_norm_finish_grads(
    const double* __restrict__ partial,
    int64_t channels,
    int64_t splits,
    int64_t count,
    const T* invstd,
    const T* w,
    bool training,
    T* gw,
    T* gb,
    double* coef) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= channels) return;
  double sg = 0, sgx = 0;
  for (int64_t k = 0; k < splits; ++k) {
    sg += partial[(c * splits + k) * 2];
    sgx += partial[(c * splits + k) * 2 + 1];
  }
  gw[c] = T(sgx);
  gb[c] = T(sg);
  const double keep = training ? 1.0 : 0.0;
  coef[3 * c] = double(invstd[c]) * (w ? double(w[c]) : 1.0);
  coef[3 * c + 1] = keep * sg / double(count);
  coef[3 * c + 2] = keep * sgx / double(count);
}

/// grad_input, and grad_residual (gr, when not null) = the masked gradient.
template <class T, class I, BnEpilogue E>
__global__ void batch_norm_grad_apply(
    const T* __restrict__ x,
    const T* __restrict__ g,
    const T* __restrict__ y,
    T* __restrict__ gi,
    T* __restrict__ gr,
    ChannelView v,
    const BnParam<T>* mean,
    const BnParam<T>* invstd,
    const BnParam<T>* scale,
    const BnParam<T>* shift,
    const double* __restrict__ coef) {
  const int64_t total = v.n * v.c * v.s;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = v.template channel_of<I>(i);
    const T gm = epilogue_grad<E>(g, y, x, i, c, scale, shift);
    const double xhat = kernels::batch_norm_xhat(double(x[i]), double(mean[c]), double(invstd[c]));
    gi[i] = T(kernels::batch_norm_grad_input(
        double(gm), xhat, coef[3 * c], coef[3 * c + 1], coef[3 * c + 2]));
    if (E == BnEpilogue::AddRelu && gr != nullptr) gr[i] = gm;
  }
}

template <class T, class I>
void batch_norm_backward(const BatchNormBackwardArgs& a) {
  using P = BnParam<T>;
  LaunchOn on(a.input.device());
  const ChannelView v{a.n, a.c, a.s, ignis::detail::batch_norm_walks_rows(a.input, a.s)};
  const int64_t count = a.n * a.s, splits = splits_for(v.cl ? channel_tiles(a.c) : a.c, count);
  Tensor partial = ignis::detail::make_tensor({a.c * splits * 2}, kFloat64, a.input.device());
  Tensor coef = ignis::detail::make_tensor({3 * a.c}, kFloat64, a.input.device());
  // The GELU epilogue recomputes the forward's normalised value from its scale and shift,
  // folded again here exactly as the forward folded them (no statistics are merged).
  Tensor fold;
  P* scale = nullptr;
  if (a.epilogue == BnEpilogue::Gelu) {
    fold = ignis::detail::make_tensor({2 * a.c}, CppTypeToDType<P>::value, a.input.device());
    scale = ptr<P>(fold);
    batch_norm_finish_stats<P><<<channel_blocks(a.c), kThreads, 0, on.stream>>>(
        nullptr, a.c, 1, /*training=*/false, ptr<P>(a.save_mean), ptr<P>(a.save_invstd), nullptr,
        nullptr, ptr<P>(a.weight), ptr<P>(a.bias), 0.0, 0.0, scale, scale + a.c);
    IGNIS_CUDA_CHECK_LAUNCH("batch_norm_backward");
  }
  const P* shift = scale ? scale + a.c : nullptr;
  with_epilogue(a.epilogue, [&]<BnEpilogue E>() {
    if (v.cl)
      batch_norm_partial_grads_cl<T, I, E>
          <<<dim3(unsigned(channel_tiles(a.c)), unsigned(splits)),
             dim3(kTileChannels, kTileRows),
             0,
             on.stream>>>(
              ptr<T>(a.input),
              ptr<T>(a.grad_out),
              ptr<T>(a.output),
              v,
              ptr<P>(a.save_mean),
              ptr<P>(a.save_invstd),
              scale,
              shift,
              splits,
              ptr<double>(partial));
    else
      batch_norm_partial_grads<T, I, E>
          <<<dim3(unsigned(a.c), unsigned(splits)), kStatThreads, 0, on.stream>>>(
              ptr<T>(a.input),
              ptr<T>(a.grad_out),
              ptr<T>(a.output),
              v,
              ptr<P>(a.save_mean),
              ptr<P>(a.save_invstd),
              scale,
              shift,
              splits,
              ptr<double>(partial));
  });
  IGNIS_CUDA_CHECK_LAUNCH("batch_norm_backward");
  batch_norm_finish_grads<P><<<channel_blocks(a.c), kThreads, 0, on.stream>>>(
      ptr<double>(partial),
      a.c,
      splits,
      count,
      ptr<P>(a.save_invstd),
      ptr<P>(a.weight),
      a.training,
      ptr<P>(a.grad_weight),
      ptr<P>(a.grad_bias),
      ptr<double>(coef));
  IGNIS_CUDA_CHECK_LAUNCH("batch_norm_backward");
  with_epilogue(a.epilogue, [&]<BnEpilogue E>() {
    batch_norm_grad_apply<T, I, E><<<grid_for(a.n * a.c * a.s, 4), kThreads, 0, on.stream>>>(
        ptr<T>(a.input),
        ptr<T>(a.grad_out),
        ptr<T>(a.output),
        ptr<T>(a.grad_input),
        ptr<T>(a.grad_residual),
        v,
        ptr<P>(a.save_mean),
        ptr<P>(a.save_invstd),
        scale,
        shift,
        ptr<double>(coef));
  });
  IGNIS_CUDA_CHECK_LAUNCH("batch_norm_backward");
}

// ---- pooling -------------------------------------------------------------------------------

/// A 4-D tensor's sizes and strides, and the order threads walk it in.
struct Dims4 {
  int64_t n, c, h, w;
  int64_t sn, sc, sh, sw;
  bool cl;  // walk channels innermost (the tensor is channels-last)
  /// (n, c, h, w) of the i-th element in walking order.
  __device__ __forceinline__ void coords(
      int64_t i, int64_t& ni, int64_t& ci, int64_t& hi, int64_t& wi) const {
    if (cl) {
      ci = i % c, i /= c, wi = i % w, i /= w, hi = i % h, ni = i / h;
    } else {
      wi = i % w, i /= w, hi = i % h, i /= h, ci = i % c, ni = i / c;
    }
  }
  __device__ __forceinline__ int64_t plane(int64_t ni, int64_t ci) const {
    return ni * sn + ci * sc;
  }
  __device__ __forceinline__ int64_t at(int64_t hi, int64_t wi) const { return hi * sh + wi * sw; }
  __host__ __device__ int64_t numel() const { return n * c * h * w; }
};

Dims4 dims_of(const Tensor& t, bool cl) {
  return {
      t.size(0),
      t.size(1),
      t.size(2),
      t.size(3),
      t.stride(0),
      t.stride(1),
      t.stride(2),
      t.stride(3),
      cl};
}

/// Pool2dParams without the optionals (the stride is resolved by the front end).
struct PoolWindow {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool count_include_pad;
  int64_t divisor;  // nonzero: divisor_override (negative is legal, as in PyTorch; 0 is refused)
};

PoolWindow window_of(const Pool2dParams& p) {
  const auto s = *p.stride;
  return {
      p.kernel[0],
      p.kernel[1],
      s[0],
      s[1],
      p.padding[0],
      p.padding[1],
      p.dilation[0],
      p.dilation[1],
      p.count_include_pad,
      p.divisor_override ? *p.divisor_override : 0};
}

template <class T>
__global__ void max_pool_forward(
    const T* __restrict__ x,
    Dims4 xd,
    T* __restrict__ y,
    Dims4 yd,
    int64_t* __restrict__ ix,
    Dims4 id,
    PoolWindow p) {
  const int64_t H = xd.h, W = xd.w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < yd.numel();
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    yd.coords(i, n, c, oh, ow);
    int64_t h0 = oh * p.sh - p.ph;
    const int64_t h1 = min(h0 + (p.kh - 1) * p.dh + 1, H);
    while (h0 < 0) h0 += p.dh;
    int64_t w0 = ow * p.sw - p.pw;
    const int64_t w1 = min(w0 + (p.kw - 1) * p.dw + 1, W);
    while (w0 < 0) w0 += p.dw;
    // The first valid tap is the default; a later value wins when greater, or NaN. 16-bit
    // values compare as float (exactly: the maximum is one of them).
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    // A dilated window can miss the input altogether: -inf with index -1, which the backward
    // skips (src/cpu/pool.cpp, max_forward).
    int64_t best = h0 < h1 && w0 < w1 ? h0 * W + w0 : -1;
    C m = -INFINITY;
    const T* xp = x + xd.plane(n, c);
    for (int64_t h = h0; h < h1; h += p.dh)
      for (int64_t w = w0; w < w1; w += p.dw) {
        const C v = C(xp[xd.at(h, w)]);
        if (v > m || v != v) m = v, best = h * W + w;
      }
    y[yd.plane(n, c) + yd.at(oh, ow)] = T(m);
    ix[id.plane(n, c) + id.at(oh, ow)] = best;
  }
}

/// Scatter: grad_input (zeroed first) at each output's argmax += its gradient. The slot
/// carries no window, so the gather of the other backwards is not possible here; windows may
/// overlap, hence atomics (the order of the few additions into one element may vary). 16-bit
/// tensors come only with disjoint windows (the slot's contract): each argmax is a different
/// element, stored without an atomic.
template <class T>
__global__ void max_pool_backward(
    const T* __restrict__ g,
    Dims4 gd,
    const int64_t* __restrict__ ix,
    Dims4 id,
    T* __restrict__ gi,
    Dims4 xd) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < gd.numel();
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    gd.coords(i, n, c, oh, ow);
    const int64_t k = ix[id.plane(n, c) + id.at(oh, ow)];
    if (k < 0) continue;  // a window with no tap in the input
    T* to = gi + xd.plane(n, c) + xd.at(k / xd.w, k % xd.w);
    if constexpr (sizeof(T) == 2)
      *to = g[gd.plane(n, c) + gd.at(oh, ow)];
    else
      atomicAdd(to, g[gd.plane(n, c) + gd.at(oh, ow)]);
  }
}

/// PyTorch's avg-pool window of output (oh, ow), clipped, and its divisor (src/cpu/pool.cpp).
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};
__device__ __forceinline__ AvgWindow
avg_window(int64_t oh, int64_t ow, int64_t H, int64_t W, const PoolWindow& p) {
  int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
  int64_t h1 = min(h0 + p.kh, H + p.ph), w1 = min(w0 + p.kw, W + p.pw);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = h0 < 0 ? 0 : h0, w0 = w0 < 0 ? 0 : w0;
  h1 = min(h1, H), w1 = min(w1, W);
  const double div = p.divisor != 0        ? double(p.divisor)
                     : p.count_include_pad ? double(padded_size)
                                           : double((h1 - h0) * (w1 - w0));
  return {h0, h1, w0, w1, div};
}

template <class T>
__global__ void avg_pool_forward(
    const T* __restrict__ x, Dims4 xd, T* __restrict__ y, Dims4 yd, PoolWindow p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < yd.numel();
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    yd.coords(i, n, c, oh, ow);
    const AvgWindow a = avg_window(oh, ow, xd.h, xd.w, p);
    const T* xp = x + xd.plane(n, c);
    double sum = 0;
    for (int64_t h = a.h0; h < a.h1; ++h)
      for (int64_t w = a.w0; w < a.w1; ++w) sum += double(xp[xd.at(h, w)]);
    // A window entirely in the padding (possible with ceil_mode) averages nothing.
    y[yd.plane(n, c) + yd.at(oh, ow)] = a.h0 < a.h1 && a.w0 < a.w1 ? T(sum / a.divisor) : T(0);
  }
}

template <class T>
__global__ void avg_pool_backward(
    const T* __restrict__ g, Dims4 gd, T* __restrict__ gi, Dims4 xd, PoolWindow p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < xd.numel();
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, h, w;
    xd.coords(i, n, c, h, w);
    const kernels::OutputRange hs = kernels::covering_outputs(h, p.kh, p.sh, p.ph, gd.h);
    const kernels::OutputRange ws = kernels::covering_outputs(w, p.kw, p.sw, p.pw, gd.w);
    const T* gp = g + gd.plane(n, c);
    T acc = T(0);
    for (int64_t oh = hs.first; oh < hs.end; ++oh)
      for (int64_t ow = ws.first; ow < ws.end; ++ow) {
        const AvgWindow a = avg_window(oh, ow, xd.h, xd.w, p);
        if (h >= a.h0 && h < a.h1 && w >= a.w0 && w < a.w1)
          acc += T(double(gp[gd.at(oh, ow)]) / a.divisor);
      }
    gi[xd.plane(n, c) + xd.at(h, w)] = acc;
  }
}

template <class T>
__global__ void adaptive_forward(const T* __restrict__ x, Dims4 xd, T* __restrict__ y, Dims4 yd) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < yd.numel();
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    yd.coords(i, n, c, oh, ow);
    const int64_t h0 = kernels::adaptive_start(oh, yd.h, xd.h),
                  h1 = kernels::adaptive_end(oh, yd.h, xd.h);
    const int64_t w0 = kernels::adaptive_start(ow, yd.w, xd.w),
                  w1 = kernels::adaptive_end(ow, yd.w, xd.w);
    const T* xp = x + xd.plane(n, c);
    double sum = 0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) sum += double(xp[xd.at(h, w)]);
    y[yd.plane(n, c) + yd.at(oh, ow)] = T(sum / double((h1 - h0) * (w1 - w0)));
  }
}

template <class T>
__global__ void adaptive_backward(const T* __restrict__ g, Dims4 gd, T* __restrict__ gi, Dims4 xd) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < xd.numel();
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, h, w;
    xd.coords(i, n, c, h, w);
    // Cells holding row h: start(o) <= h < end(o), i.e. floor(h*Ho/H) <= o < ceil((h+1)*Ho/H).
    const int64_t oh0 = h * gd.h / xd.h, oh1 = ((h + 1) * gd.h + xd.h - 1) / xd.h;
    const int64_t ow0 = w * gd.w / xd.w, ow1 = ((w + 1) * gd.w + xd.w - 1) / xd.w;
    const T* gp = g + gd.plane(n, c);
    T acc = T(0);
    for (int64_t oh = oh0; oh < min(oh1, gd.h); ++oh) {
      const int64_t h0 = kernels::adaptive_start(oh, gd.h, xd.h),
                    h1 = kernels::adaptive_end(oh, gd.h, xd.h);
      if (h < h0 || h >= h1) continue;
      for (int64_t ow = ow0; ow < min(ow1, gd.w); ++ow) {
        const int64_t w0 = kernels::adaptive_start(ow, gd.w, xd.w),
                      w1 = kernels::adaptive_end(ow, gd.w, xd.w);
        if (w < w0 || w >= w1) continue;
        acc += T(double(gp[gd.at(oh, ow)]) / double((h1 - h0) * (w1 - w0)));
      }
    }
    gi[xd.plane(n, c) + xd.at(h, w)] = acc;
  }
}

/// Launches kernel over `work` elements (a no-op for none) with T picked from `like`: float
/// or double, and with k16Bit also BFloat16 and Half (max pooling, which only compares and
/// moves elements).
template <bool k16Bit = false, class Launch>
void launch_pool(const Tensor& like, int64_t work, const char* op, const Launch& launch) {
  if (work == 0) return;
  LaunchOn on(like.device());
  const auto run = [&]<class T>() { launch.template operator()<T>(on.stream); };
  if constexpr (k16Bit)
    ignis::detail::visit_floating_storage(like.dtype(), run);
  else
    visit_float_or_double(like.dtype(), run);
  IGNIS_CUDA_CHECK_LAUNCH(op);
}

bool cl(const Tensor& t) { return ignis::detail::is_channels_last(t); }

void max_pool2d_forward(
    const Tensor& in, const Tensor& out, const Tensor& idx, const Pool2dParams& p) {
  const Dims4 yd = dims_of(out, cl(out));
  launch_pool<true>(in, yd.numel(), "max_pool2d", [&]<class T>(cudaStream_t s) {
    max_pool_forward<T><<<grid_for(yd.numel()), kThreads, 0, s>>>(
        ptr<T>(in),
        dims_of(in, cl(in)),
        ptr<T>(out),
        yd,
        ptr<int64_t>(idx),
        dims_of(idx, cl(idx)),
        window_of(p));
  });
}

void max_pool2d_backward(const Tensor& go, const Tensor& idx, const Tensor& gi) {
  if (gi.numel() == 0) return;
  IGNIS_CHECK(
      gi.is_contiguous() || cl(gi),
      ValueError,
      "[max_pool2d_backward] grad_input must be dense (NCHW or channels-last)");
  {
    LaunchOn on(gi.device());
    IGNIS_CUDA_CHECK(
        cudaMemsetAsync(gi.data_ptr(), 0, size_t(gi.numel()) * gi.element_size(), on.stream),
        "max_pool2d_backward");
  }
  const Dims4 gd = dims_of(go, cl(go));
  launch_pool<true>(gi, gd.numel(), "max_pool2d_backward", [&]<class T>(cudaStream_t s) {
    max_pool_backward<T><<<grid_for(gd.numel()), kThreads, 0, s>>>(
        ptr<T>(go), gd, ptr<int64_t>(idx), dims_of(idx, cl(idx)), ptr<T>(gi), dims_of(gi, cl(gi)));
  });
}

void avg_pool2d_forward(const Tensor& in, const Tensor& out, const Pool2dParams& p) {
  const Dims4 yd = dims_of(out, cl(out));
  launch_pool(in, yd.numel(), "avg_pool2d", [&]<class T>(cudaStream_t s) {
    avg_pool_forward<T><<<grid_for(yd.numel()), kThreads, 0, s>>>(
        ptr<T>(in), dims_of(in, cl(in)), ptr<T>(out), yd, window_of(p));
  });
}

void avg_pool2d_backward(const Tensor& go, const Tensor& gi, const Pool2dParams& p) {
  const Dims4 xd = dims_of(gi, cl(gi));
  launch_pool(gi, xd.numel(), "avg_pool2d_backward", [&]<class T>(cudaStream_t s) {
    avg_pool_backward<T><<<grid_for(xd.numel()), kThreads, 0, s>>>(
        ptr<T>(go), dims_of(go, cl(go)), ptr<T>(gi), xd, window_of(p));
  });
}

void adaptive_avg_pool2d_forward(const Tensor& in, const Tensor& out) {
  const Dims4 yd = dims_of(out, cl(out));
  launch_pool(in, yd.numel(), "adaptive_avg_pool2d", [&]<class T>(cudaStream_t s) {
    adaptive_forward<T><<<grid_for(yd.numel()), kThreads, 0, s>>>(
        ptr<T>(in), dims_of(in, cl(in)), ptr<T>(out), yd);
  });
}

void adaptive_avg_pool2d_backward(const Tensor& go, const Tensor& gi) {
  const Dims4 xd = dims_of(gi, cl(gi));
  launch_pool(gi, xd.numel(), "adaptive_avg_pool2d_backward", [&]<class T>(cudaStream_t s) {
    adaptive_backward<T>
        <<<grid_for(xd.numel()), kThreads, 0, s>>>(ptr<T>(go), dims_of(go, cl(go)), ptr<T>(gi), xd);
  });
}
}  // namespace

void register_nn() {
  using namespace ignis::detail;
  batch_norm_forward_kernel.set(DeviceType::CUDA, [](const BatchNormArgs& a) {
    if (a.c == 0) return;
    visit_floating_storage(a.input.dtype(), [&]<class T>() {
      with_index_type(a.n * a.c * a.s, [&]<class I>() { batch_norm_forward<T, I>(a); });
    });
  });
  batch_norm_backward_kernel.set(DeviceType::CUDA, [](const BatchNormBackwardArgs& a) {
    if (a.c == 0) return;
    visit_floating_storage(a.input.dtype(), [&]<class T>() {
      with_index_type(a.n * a.c * a.s, [&]<class I>() { batch_norm_backward<T, I>(a); });
    });
  });
  max_pool2d_forward_kernel.set(DeviceType::CUDA, &max_pool2d_forward);
  max_pool2d_backward_kernel.set(DeviceType::CUDA, &max_pool2d_backward);
  avg_pool2d_forward_kernel.set(DeviceType::CUDA, &avg_pool2d_forward);
  avg_pool2d_backward_kernel.set(DeviceType::CUDA, &avg_pool2d_backward);
  adaptive_avg_pool2d_forward_kernel.set(DeviceType::CUDA, &adaptive_avg_pool2d_forward);
  adaptive_avg_pool2d_backward_kernel.set(DeviceType::CUDA, &adaptive_avg_pool2d_backward);
  register_conv();
}

}  // namespace ignis::cuda::detail
