// CPU kernels of batch norm (NCHW and channels-last paths, with its fused ReLU / residual-add /
// GELU epilogues) plus register_nn_cpu(), the entry point of the nn kernels (batch norm, layer
// and group norm in row_norm.cpp, pooling, oneDNN convolutions) called from register.cpp. Own
// loops: statistics end in double totals (two passes: mean, then squared deviations, which avoids
// the cancellation of E[x^2] - E[x]^2) and the normalisation is one fused multiply-add per
// element; the per-element formulas are src/kernels/batch_norm_math.h, shared with CUDA.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "cpu/chunked_sums.h"
#include "cpu/batch_norm_bf16_rows.h"
#include "cpu/loops.h"
#include "cpu/vec_convert.h"
#include "kernels/batch_norm_math.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::cpu {

void register_pool_cpu();      // pool.cpp
void register_resample_cpu();  // resample.cpp: pad, interpolate
void register_row_norm_cpu();  // row_norm.cpp: layer norm, group norm
#ifdef IGNIS_WITH_DNNL
void register_conv_cpu();  // dnnl_conv.cpp
#endif

namespace {

using detail::BatchNormArgs;
using detail::BatchNormBackwardArgs;
using kernels::BnEpilogue;
using kernels::BnParam;

// ---- batch norm ----------------------------------------------------------------------------
// Note [Batch norm on 16-bit inputs] (src/kernels/batch_norm_math.h): a bf16/float16 input
// goes through the float32 loops in pieces of kPiece values widened into float buffers on
// the stack (src/cpu/vec_convert.h), and results are narrowed back; float32 and float64
// inputs run the same loops on the tensors themselves, in one piece.

template <class T>
inline constexpr bool kIs16Bit = !std::is_same_v<BnParam<T>, T>;

/// Values per staged piece: the few float buffers of a piece stay in L1.
constexpr int64_t kPiece = 512;

/// The type the hot loops compute their per-element terms and short sums in: float for
/// float32 and the 16-bit inputs, double for float64 (Note [Batch norm on 16-bit inputs]).
/// Float sums run over at most kShortRun channels-last rows, or one piece of kPiece values
/// per NCHW run (kPiece / kLanes per lane), and then join double totals.
template <class T>
using LoopAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// v in the loop type.
template <class T>
LoopAcc<T> loop_value(T v) {
  return static_cast<LoopAcc<T>>(static_cast<BnParam<T>>(v));
}
constexpr int64_t kShortRun = 64;

/// Rows per run for loop type A out of a range of `all` rows: kShortRun for float; the whole
/// range for double, whose sums need no runs (so float64 inputs sum as one run).
template <class A>
int64_t run_rows(int64_t all) {
  return std::is_same_v<A, float> ? kShortRun : std::max<int64_t>(all, 1);
}

/// NCHW sums go in kLanes lanes (one per element of an 8-wide step), so the loops vectorise
/// while reordering nothing but the lanes' additions.
constexpr int64_t kLanes = 8;

/// Whether T's runs go in pieces of kPiece values (which bound the float sums' runs): the
/// 16-bit inputs, widened into float buffers, and float32, read in place. float64 runs are
/// one piece.
template <class T>
inline constexpr bool kInPieces = std::is_same_v<LoopAcc<T>, float>;

/// Calls f(v, len, off) so that v[0, len) are x[off, off + len) over all of [0, n).
template <class T, class F>
void read_pieces(const T* x, int64_t n, const F& f) {
  if constexpr (kIs16Bit<T>) {
    float buf[kPiece];
    for (int64_t off = 0; off < n; off += kPiece) {
      const int64_t len = std::min(kPiece, n - off);
      widen(x + off, buf, len);
      f(static_cast<const float*>(buf), len, off);
    }
  } else if constexpr (kInPieces<T>) {
    for (int64_t off = 0; off < n; off += kPiece) f(x + off, std::min(kPiece, n - off), off);
  } else {
    f(x, n, int64_t(0));
  }
}

/// The backward passes' pieces: calls f(x, g, y, out, len, off) with x, g and y (null when y
/// is) readable and out (null when out is) writable at [off, off + len) of the tensors'
/// run of n values; for 16-bit T, out is narrowed into the tensor after f returns.
template <class T, class F>
void grad_pieces(const T* x, const T* g, const T* y, T* out, int64_t n, const F& f) {
  if constexpr (kIs16Bit<T>) {
    float xb[kPiece], gb[kPiece], yb[kPiece], ob[kPiece];
    for (int64_t off = 0; off < n; off += kPiece) {
      const int64_t len = std::min(kPiece, n - off);
      widen(x + off, xb, len);
      widen(g + off, gb, len);
      if (y) widen(y + off, yb, len);
      f(static_cast<const float*>(xb), static_cast<const float*>(gb),
        y ? static_cast<const float*>(yb) : nullptr, out ? ob : nullptr, len, off);
      if (out) narrow(static_cast<const float*>(ob), out + off, len);
    }
  } else if constexpr (kInPieces<T>) {
    for (int64_t off = 0; off < n; off += kPiece)
      f(x + off, g + off, y ? y + off : nullptr, out ? out + off : nullptr,
        std::min(kPiece, n - off), off);
  } else {
    f(x, g, y, out, n, int64_t(0));
  }
}

// NCHW: x[n, c, s] at n*C*S + c*S + s (a channel is N runs of S contiguous values).
// Channels-last: x[n, c, s] at (n*S + s)*C + c (rows of C contiguous values).

/// The sum over one run of n values of f(v) for v in LoopAcc<T>: each piece in kLanes lanes
/// (so the loop vectorises while reordering nothing but the lanes' additions), whose sum
/// joins the double result.
template <class T, class F>
double run_sum(const T* x, int64_t n, const F& f) {
  using A = LoopAcc<T>;
  double s = 0;
  read_pieces(x, n, [&](const auto* v, int64_t len, int64_t) {
    A lanes[kLanes] = {};
    const int64_t full = len / kLanes * kLanes;
    for (int64_t i = 0; i < full; i += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += f(A(v[i + l]));
    for (int64_t i = full; i < len; ++i) lanes[i - full] += f(A(v[i]));
    for (const A l : lanes) s += double(l);
  });
  return s;
}

/// Chan et al.'s pairwise update: the mean and squared deviations m2 of a set of n values
/// joined by nb more values with mean mb and squared deviations qb (the caller adds nb to
/// its count).
inline void chan_merge(double n, double& mean, double& m2, double nb, double mb, double qb) {
  const double n2 = n + nb;
  if (n2 == 0) return;
  const double delta = mb - mean, f = nb / n2;
  mean += delta * f;
  m2 += qb + delta * delta * n * f;
}

/// The grain of a parallel walk over runs of run_len values: about kGrainSize values a task.
inline int64_t run_grain(int64_t run_len) {
  return std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(run_len, 1));
}

/// NCHW statistics: the mean and biased variance of each channel. Each run of S values (one
/// image's plane of one channel) gives its mean (as offsets from its first value) and then,
/// while it is in cache, its squared deviations from that mean (one read from memory); the
/// runs' statistics merge into the channel's with chan_merge, per chunk and then over chunks.
template <class T>
void nchw_stats(const T* x, int64_t N, int64_t C, int64_t S, double* mean, double* var) {
  using A = LoopAcc<T>;
  // Runs in memory order, split over chunks: a channel's runs lie a whole image apart, and
  // reading them channel by channel streams memory in short scattered pieces.
  const int64_t runs = N * C, grain = run_grain(S), chunks = chunks_for(runs, grain);
  // Per chunk: count, mean and squared deviations of each channel.
  std::vector<double> acc(size_t(chunks * 3 * C), 0.0);
  parallel_chunks(runs, grain, [&](int64_t k, int64_t p0, int64_t p1) {
    double *n = acc.data() + k * 3 * C, *m = n + C, *q = m + C;
    for (int64_t p = p0; p < p1; ++p) {
      const T* r = x + p * S;
      const int64_t c = p % C;
      const A first = loop_value(r[0]);
      const double rm =
          double(first) + run_sum(r, S, [&](A v) { return v - first; }) / double(S);
      // Deviations from the run's mean rounded to A (Note [Batch norm on 16-bit inputs]).
      const A centre = A(rm);
      const double rq = run_sum(r, S, [&](A v) {
        const A d = v - centre;
        return d * d;
      });
      chan_merge(n[c], m[c], q[c], double(S), rm, rq);
      n[c] += double(S);
    }
  });
  std::vector<double> n(static_cast<size_t>(C), 0.0);
  for (int64_t c = 0; c < C; ++c) mean[c] = 0, var[c] = 0;
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t c = 0; c < C; ++c) {
      const double* a = acc.data() + k * 3 * C;
      chan_merge(n[size_t(c)], mean[c], var[c], a[c], a[C + c], a[2 * C + c]);
      n[size_t(c)] += a[c];
    }
  for (int64_t c = 0; c < C; ++c) var[c] /= n[size_t(c)];
}

/// Channels-last statistics: the mean and biased variance of each channel over `rows` rows
/// of C values. Rows go in blocks of about 64 KiB that stay in cache: a block's mean (summed as
/// offsets from the block's first row, so float sums of values far from zero keep their
/// centre), then its squared deviations from that mean (the two-pass accuracy, one read from
/// memory), merged into the running totals with Chan et al.'s pairwise update, as the CUDA
/// kernels merge.
template <class T>
void channels_last_stats(const T* x, int64_t rows, int64_t C, double* mean, double* var) {
  using A = LoopAcc<T>;
  const int64_t block = std::max<int64_t>(1, (int64_t(64) << 10) / (C * int64_t(sizeof(T))));
  const int64_t blocks = (rows + block - 1) / block;
  const int64_t chunks = chunks_for(blocks, 1);
  // Per chunk: count, then mean [C], squared deviations [C], and scratch for a block [2C].
  const int64_t width = 1 + 4 * C;
  std::vector<double> acc(size_t(chunks * width), 0.0);
  parallel_chunks(blocks, 1, [&](int64_t k, int64_t b0, int64_t b1) {
    double* n = acc.data() + k * width;
    double *m = n + 1, *q = m + C, *bm = q + C, *bq = bm + C;
    // run: a short run's sums in A; centre: the block's first row, then its mean, in A (both
    // padded with zeros for the bf16 row kernels).
    const size_t padded = size_t(bf16_rows::padded_channels(C));
    std::vector<A> run(padded), centre(padded);
    // tot[c] += the sum over rows [r0, r1) of v - centre[c], or with squares of its square,
    // for v a row's value of channel c, taken in A over runs of run_rows<A> rows.
    auto sum_rows = [&](int64_t r0, int64_t r1, double* tot, bool squares) {
      // The staged loop, with the term chosen outside it.
      auto add_rows = [&](int64_t s0, int64_t s1, const auto& term) {
        for (int64_t r = s0; r < s1; ++r)
          read_pieces(x + r * C, C, [&](const auto* v, int64_t len, int64_t off) {
            A* __restrict__ ro = run.data() + off;
            const A* __restrict__ co = centre.data() + off;
            for (int64_t c = 0; c < len; ++c) ro[c] += term(A(v[c]), co[c]);
          });
      };
      const int64_t step = run_rows<A>(r1 - r0);
      for (int64_t s0 = r0; s0 < r1; s0 += step) {
        const int64_t s1 = std::min(r1, s0 + step);
        std::fill(run.begin(), run.end(), A(0));
        if constexpr (std::is_same_v<T, BFloat16>)
          bf16_rows::sums(x + s0 * C, s1 - s0, C, centre.data(), squares, run.data());
        else if (squares)
          add_rows(s0, s1, [](A v, A centre_c) {
            const A d = v - centre_c;
            return d * d;
          });
        else
          add_rows(s0, s1, [](A v, A centre_c) { return v - centre_c; });
        for (int64_t c = 0; c < C; ++c) tot[c] += double(run[size_t(c)]);
      }
    };
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
      const double nb = double(r1 - r0);
      for (int64_t c = 0; c < C; ++c)
        bm[c] = 0, bq[c] = 0, centre[size_t(c)] = loop_value(x[r0 * C + c]);
      sum_rows(r0, r1, bm, false);
      for (int64_t c = 0; c < C; ++c)
        bm[c] = double(centre[size_t(c)]) + bm[c] / nb, centre[size_t(c)] = A(bm[c]);
      // Squared deviations from the block mean rounded to A: more than those from bm by
      // nb (bm - centre)^2, at most 2^-48 bm^2 per row for float, which is left out.
      sum_rows(r0, r1, bq, true);
      for (int64_t c = 0; c < C; ++c) chan_merge(*n, m[c], q[c], nb, bm[c], bq[c]);
      *n += nb;
    }
  });
  for (int64_t c = 0; c < C; ++c) mean[c] = 0, var[c] = 0;
  double n = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    const double* nk = acc.data() + k * width;
    const double *m = nk + 1, *q = m + C;
    for (int64_t c = 0; c < C; ++c) chan_merge(n, mean[c], var[c], *nk, m[c], q[c]);
    n += *nk;
  }
  for (int64_t c = 0; c < C; ++c) var[c] /= n;
}

/// Calls run(i0, len, c) over every element once, in parallel: NCHW gives runs of S elements
/// of one channel c; channels-last runs of C elements, one per channel (c = -1), so kernels
/// write two plain inner loops that vectorise (per-channel constants scalar or indexed).
template <class Run>
void channel_runs(int64_t N, int64_t C, int64_t S, bool cl, const Run& run, bool stream = false) {
  const int64_t runs = cl ? N * S : N * C, len = cl ? C : S;
  detail::parallel_for(0, runs, run_grain(len), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) run(p * len, len, cl ? -1 : p % C);
    if (stream) store_fence();  // the runs' streaming stores, before the join
  });
}

/// Whether a pass on a channels-last input goes to the bf16 row kernels
/// (src/cpu/batch_norm_bf16_rows.h): a bf16 input with an epilogue they take.
template <BnEpilogue E, class T>
constexpr bool kBf16Rows = std::is_same_v<T, BFloat16> && bf16_rows::handles(E);

/// f(r0, r1) over ranges of the rows of C values, in parallel (the row kernels' loop).
template <class F>
void parallel_rows(int64_t rows, int64_t C, const F& f) {
  detail::parallel_for(0, rows, run_grain(C), f);
}

template <class T, class P = BnParam<T>>
void batch_norm_forward_stats(const BatchNormArgs& a, bool cl, P* mean, P* invstd) {
  const int64_t N = a.n, C = a.c, S = a.s;
  const T* x = data_or_null<T>(a.input);
  std::vector<double> m(static_cast<size_t>(C)), v(static_cast<size_t>(C));
  const double count = double(N * S);
  if (cl) {
    channels_last_stats(x, N * S, C, m.data(), v.data());
  } else {
    nchw_stats(x, N, C, S, m.data(), v.data());
  }
  P* rm = data_or_null<P>(a.running_mean);
  P* rv = data_or_null<P>(a.running_var);
  for (int64_t c = 0; c < C; ++c) {
    mean[c] = P(m[c]);
    invstd[c] = P(1.0 / std::sqrt(v[c] + a.eps));
    if (rm) rm[c] = P((1 - a.momentum) * double(rm[c]) + a.momentum * m[c]);
    // The running variance is the unbiased one (count >= 2 was checked).
    if (rv) rv[c] = P((1 - a.momentum) * double(rv[c]) + a.momentum * v[c] * count / (count - 1));
  }
}

template <BnEpilogue E, class T>
void batch_norm_forward_apply(const BatchNormArgs& a, bool cl, const T* scale, const T* shift) {
  const T* __restrict__ x = data_or_null<T>(a.input);
  const T* __restrict__ res = data_or_null<T>(a.residual);
  T* __restrict__ y = data_or_null<T>(a.output);
  // A large output goes out with streaming stores (Note [Streaming stores]): it is not read
  // back from the cache, and they save its read-for-ownership.
  const bool stream = use_streaming_stores<T>(a.n * a.c * a.s);
  channel_runs(
      a.n, a.c, a.s, cl,
      [&](int64_t i0, int64_t len, int64_t c) {
        const T *xr = x + i0, *rr = E == BnEpilogue::AddRelu ? res + i0 : nullptr;
        if (c >= 0) {
          const T sc = scale[c], sh = shift[c];
          write_contiguous(y + i0, len, stream, [&](int64_t j) {
            return kernels::batch_norm_output<E>(xr[j], sc, sh, rr ? rr[j] : T(0));
          });
        } else {
          write_contiguous(y + i0, len, stream, [&](int64_t j) {
            return kernels::batch_norm_output<E>(xr[j], scale[j], shift[j], rr ? rr[j] : T(0));
          });
        }
      },
      stream);
}

/// The 16-bit twin of batch_norm_forward_apply: batch_norm_output_16's values, computed on
/// staged pieces (the residual case rounds the normalised piece to T before adding).
template <BnEpilogue E, class T>
void batch_norm_forward_apply_16(const BatchNormArgs& a, bool cl, const float* scale,
                                 const float* shift) {
  const T* x = data_or_null<T>(a.input);
  const T* res = data_or_null<T>(a.residual);
  T* y = data_or_null<T>(a.output);
  if constexpr (kBf16Rows<E, T>) {
    if (cl) {
      const int64_t C = a.c;
      parallel_rows(a.n * a.s, C, [&](int64_t r0, int64_t r1) {
        bf16_rows::forward_apply(
            E, x + r0 * C, res ? res + r0 * C : nullptr, y + r0 * C, r1 - r0, C, scale, shift);
      });
      return;
    }
  }
  channel_runs(a.n, a.c, a.s, cl, [&](int64_t i0, int64_t len, int64_t c) {
    float xb[kPiece], yb[kPiece], rb[kPiece];
    // Raw storage: an array of T would be zeroed on every call (T's bits start at 0).
    alignas(32) uint16_t rounded_bits[kPiece];
    T* rounded = reinterpret_cast<T*>(rounded_bits);
    for (int64_t off = 0; off < len; off += kPiece) {
      const int64_t n = std::min(kPiece, len - off);
      widen(x + i0 + off, xb, n);
      if (c >= 0) {
        const float sc = scale[c], sh = shift[c];
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) yb[j] = xb[j] * sc + sh;
      } else {
        const float *sc = scale + off, *sh = shift + off;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) yb[j] = xb[j] * sc[j] + sh[j];
      }
      if constexpr (E == BnEpilogue::AddRelu || E == BnEpilogue::Gelu) {
        // The unfused batch_norm rounds its output to T before add or gelu.
        narrow(static_cast<const float*>(yb), rounded, n);
        widen(static_cast<const T*>(rounded), yb, n);
      }
      if constexpr (E == BnEpilogue::AddRelu) widen(res + i0 + off, rb, n);
      if constexpr (E != BnEpilogue::None) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j)
          yb[j] = kernels::batch_norm_epilogue<E>(yb[j], E == BnEpilogue::AddRelu ? rb[j] : 0.0f);
      }
      narrow(static_cast<const float*>(yb), y + i0 + off, n);
    }
  });
}

template <BnEpilogue E, class T, class P>
void batch_norm_forward_apply_any(const BatchNormArgs& a, bool cl, const P* scale, const P* shift) {
  if constexpr (kIs16Bit<T>)
    batch_norm_forward_apply_16<E, T>(a, cl, scale, shift);
  else
    batch_norm_forward_apply<E, T>(a, cl, scale, shift);
}

/// scale = invstd * weight and shift = bias - mean * scale per channel, each computed in
/// double and rounded once to P (the forward's output is x * scale + shift; the GELU
/// epilogue's backward recomputes that value from the same two).
template <class P>
void fold_scale_shift(int64_t C, const P* mean, const P* invstd, const P* w, const P* b,
                      std::vector<P>& scale, std::vector<P>& shift) {
  scale.resize(static_cast<size_t>(C));
  shift.resize(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const double sc = double(invstd[c]) * (w ? double(w[c]) : 1.0);
    scale[c] = P(sc);
    shift[c] = P((b ? double(b[c]) : 0.0) - double(mean[c]) * sc);
  }
}

template <class T>
void batch_norm_forward(const BatchNormArgs& a) {
  using P = BnParam<T>;
  const int64_t C = a.c;
  const bool cl = detail::batch_norm_walks_rows(a.input, a.s);
  P* mean = data_or_null<P>(a.save_mean);
  P* invstd = data_or_null<P>(a.save_invstd);
  if (a.training) batch_norm_forward_stats<T>(a, cl, mean, invstd);
  // Eval mode folds the running statistics (save_mean/save_invstd) the same way.
  std::vector<P> scale, shift;
  fold_scale_shift<P>(C, mean, invstd, data_or_null<P>(a.weight), data_or_null<P>(a.bias), scale, shift);
  scale.resize(size_t(bf16_rows::padded_channels(C)));  // zeros past C for the row kernels
  shift.resize(size_t(bf16_rows::padded_channels(C)));
  switch (a.epilogue) {
    case BnEpilogue::None: return batch_norm_forward_apply_any<BnEpilogue::None, T>(a, cl, scale.data(), shift.data());
    case BnEpilogue::Relu: return batch_norm_forward_apply_any<BnEpilogue::Relu, T>(a, cl, scale.data(), shift.data());
    case BnEpilogue::AddRelu: return batch_norm_forward_apply_any<BnEpilogue::AddRelu, T>(a, cl, scale.data(), shift.data());
    case BnEpilogue::Gelu: return batch_norm_forward_apply_any<BnEpilogue::Gelu, T>(a, cl, scale.data(), shift.data());
  }
}

/// The per-channel values the backward passes read, in their loop type A, as arrays indexed
/// like the elements they meet (a channels-last row's channels, or one NCHW channel's value
/// at index 0): mean, invstd, and for the GELU epilogue the forward's scale and shift (P
/// values, exact in A).
template <class A>
struct ChannelCoefs {
  const A *mean, *invstd, *scale, *shift;
  ChannelCoefs at(int64_t off) const {
    return {mean + off, invstd + off, scale ? scale + off : nullptr, shift ? shift + off : nullptr};
  }
};

/// sg += gm and sgx += gm * xhat over n elements of a channels-last row (q, s0, s1 indexed by
/// element) for gm the gradient through the epilogue, which is also stored to gm_out when
/// given (the residual's gradient). S: the tensors' storage type (T, the compute type, is
/// float for 16-bit S; A the loop type, LoopAcc<S>). Plain loops over restrict pointers, so
/// that the compiler vectorises them.
template <BnEpilogue E, bool kStore, class S, class T, class A>
void grad_sums_run(
    const T* __restrict__ x,
    const T* __restrict__ g,
    const T* __restrict__ y,
    T* __restrict__ gm_out,
    int64_t n,
    ChannelCoefs<A> q,
    A* __restrict__ s0,
    A* __restrict__ s1) {
  const A* __restrict__ m = q.mean;
  const A* __restrict__ is = q.invstd;
  constexpr bool kMask = E == BnEpilogue::Relu || E == BnEpilogue::AddRelu;
  for (int64_t j = 0; j < n; ++j) {
    const T gm = kernels::batch_norm_epilogue_grad<E, S>(
        g[j], x[j], kMask ? y[j] : T(0), E == BnEpilogue::Gelu ? T(q.scale[j]) : T(0),
        E == BnEpilogue::Gelu ? T(q.shift[j]) : T(0));
    if constexpr (kStore) gm_out[j] = gm;
    s0[j] += A(gm);
    s1[j] += A(gm) * kernels::batch_norm_xhat(A(x[j]), m[j], is[j]);
  }
}

/// Per-channel values of the backward passes, in the loop type A: mean and invstd; for the
/// GELU epilogue the forward's scale and shift (empty otherwise); and the coefficients of the
/// input gradient k (g - mg - xhat mgx), filled after the sums pass.
template <class A>
struct GradCoef {
  std::vector<A> mean, invstd, scale, shift, k, mg, mgx;
  ChannelCoefs<A> at(int64_t c) const {
    return {&mean[c], &invstd[c], scale.empty() ? nullptr : &scale[c],
            shift.empty() ? nullptr : &shift[c]};
  }
};

/// Per channel, in one pass: sg = sum of the gradient gm through the epilogue, sgx = sum of
/// gm * xhat; with kStore, gm itself into gm_out.
template <BnEpilogue E, bool kStore, class T, class A = LoopAcc<T>>
void batch_norm_grad_sums(
    const BatchNormBackwardArgs& a,
    bool cl,
    const GradCoef<A>& q,
    T* gm_out,
    double* sg,
    double* sgx) {
  const int64_t N = a.n, C = a.c, S = a.s;
  const T *x = data_or_null<T>(a.input), *g = data_or_null<T>(a.grad_out), *y = data_or_null<T>(a.output);
  // f(x, g, y, gm, len, off) on the pieces of the run of n values at i0.
  auto pieces = [&](int64_t i0, int64_t n, const auto& f) {
    grad_pieces(x + i0, g + i0, y ? y + i0 : nullptr, kStore ? gm_out + i0 : nullptr, n, f);
  };
  if (!cl) {
    // Runs of S values (one image's plane of one channel) in memory order, split over
    // chunks (as nchw_stats walks them). Each piece's sums go in kLanes lanes of A, held in
    // registers with the channel's coefficients as scalars, and join the chunk's double
    // totals (at most kPiece / kLanes values per float lane; float64 runs are one piece).
    const int64_t runs = N * C, grain = run_grain(S), chunks = chunks_for(runs, grain);
    std::vector<double> acc(size_t(chunks * 2 * C), 0.0);
    constexpr bool kMask = E == BnEpilogue::Relu || E == BnEpilogue::AddRelu;
    constexpr bool kGelu = E == BnEpilogue::Gelu;
    parallel_chunks(runs, grain, [&](int64_t k, int64_t p0, int64_t p1) {
      double* a0 = acc.data() + k * 2 * C;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t c = p % C;
        const A m = q.mean[c], is = q.invstd[c];
        const A sc = q.scale.empty() ? A(0) : q.scale[c], sh = q.shift.empty() ? A(0) : q.shift[c];
        pieces(p * S, S,
               [&](const auto* xp, const auto* gp, const auto* yp, auto* mp, int64_t len, int64_t) {
                 using V = std::remove_cv_t<std::remove_pointer_t<decltype(xp)>>;
                 A s0[kLanes] = {}, s1[kLanes] = {};
                 // Whole steps of kLanes values, then the rest into the first lanes.
                 for (int64_t j0 = 0; j0 < len; j0 += kLanes)
                   for (int64_t l = 0; l < std::min(kLanes, len - j0); ++l) {
                     const int64_t j = j0 + l;
                     const V gm = kernels::batch_norm_epilogue_grad<E, T>(
                         gp[j], xp[j], kMask ? yp[j] : V(0), kGelu ? V(sc) : V(0),
                         kGelu ? V(sh) : V(0));
                     if constexpr (kStore) mp[j] = gm;
                     s0[l] += A(gm);
                     s1[l] += A(gm) * kernels::batch_norm_xhat(A(xp[j]), m, is);
                   }
                 for (int64_t l = 0; l < kLanes; ++l)
                   a0[c] += double(s0[l]), a0[C + c] += double(s1[l]);
               });
      }
    });
    std::vector<double> tot(static_cast<size_t>(2 * C));
    reduce_chunks(acc, chunks, 2 * C, tot.data());
    for (int64_t c = 0; c < C; ++c) sg[c] = tot[size_t(c)], sgx[c] = tot[size_t(C + c)];
    return;
  }
  // Channels-last: per chunk of rows, sums in A over runs of run_rows<A> rows, each run's
  // joining the chunk's double totals.
  const int64_t rows = N * S, grain = run_grain(C);
  const int64_t chunks = chunks_for(rows, grain);
  std::vector<double> acc(size_t(chunks * 2 * C), 0.0);
  const int64_t Cp = bf16_rows::padded_channels(C);
  parallel_chunks(rows, grain, [&](int64_t k, int64_t r0, int64_t r1) {
    double* a0 = acc.data() + k * 2 * C;
    // The run's sums: sg at [0, C), sgx at [Cp, Cp + C), zeros between (row kernels' padding).
    std::vector<A> run(static_cast<size_t>(2 * Cp));
    const int64_t step = run_rows<A>(r1 - r0);
    for (int64_t s0 = r0; s0 < r1; s0 += step) {
      const int64_t s1 = std::min(r1, s0 + step);
      std::fill(run.begin(), run.end(), A(0));
      if constexpr (kBf16Rows<E, T>)
        bf16_rows::grad_sums(
            E,
            x + s0 * C,
            g + s0 * C,
            y ? y + s0 * C : nullptr,
            kStore ? gm_out + s0 * C : nullptr,
            s1 - s0,
            C,
            q.mean.data(),
            q.invstd.data(),
            run.data(),
            run.data() + Cp);
      else
        for (int64_t r = s0; r < s1; ++r)
          pieces(
              r * C,
              C,
              [&](const auto* xp,
                  const auto* gp,
                  const auto* yp,
                  auto* mp,
                  int64_t len,
                  int64_t off) {
                grad_sums_run<E, kStore, T>(
                    xp, gp, yp, mp, len, q.at(off), run.data() + off, run.data() + Cp + off);
              });
      for (int64_t c = 0; c < C; ++c)
        a0[c] += double(run[size_t(c)]), a0[C + c] += double(run[size_t(Cp + c)]);
    }
  });
  std::vector<double> tot(static_cast<size_t>(2 * C));
  reduce_chunks(acc, chunks, 2 * C, tot.data());
  for (int64_t c = 0; c < C; ++c) sg[c] = tot[c], sgx[c] = tot[C + c];
}

/// grad_input over n elements from the gradient g (through epilogue E, as grad_sums_run),
/// computed in A; kScalar: one channel's coefficients at index 0 (NCHW), else one per
/// element (a channels-last row).
template <BnEpilogue E, bool kScalar, class S, class T, class A>
void grad_apply_run(
    const T* __restrict__ x,
    const T* __restrict__ g,
    const T* __restrict__ y,
    T* __restrict__ gi,
    int64_t n,
    ChannelCoefs<A> q,
    const A* __restrict__ k,
    const A* __restrict__ mg,
    const A* __restrict__ mgx,
    bool stream) {
  const A* __restrict__ m = q.mean;
  const A* __restrict__ is = q.invstd;
  constexpr bool kMask = E == BnEpilogue::Relu || E == BnEpilogue::AddRelu;
  write_contiguous(gi, n, stream, [&](int64_t j) {
    const int64_t c = kScalar ? 0 : j;
    const T gm = kernels::batch_norm_epilogue_grad<E, S>(
        g[j], x[j], kMask ? y[j] : T(0), E == BnEpilogue::Gelu ? T(q.scale[c]) : T(0),
        E == BnEpilogue::Gelu ? T(q.shift[c]) : T(0));
    const A xhat = kernels::batch_norm_xhat(A(x[j]), m[c], is[c]);
    return T(kernels::batch_norm_grad_input(A(gm), xhat, k[c], mg[c], mgx[c]));
  });
}

template <BnEpilogue E, class T, class A = LoopAcc<T>>
void batch_norm_grad_apply(
    const BatchNormBackwardArgs& a, bool cl, const T* g, const T* y, const GradCoef<A>& q) {
  const T* x = data_or_null<T>(a.input);
  T* gi = data_or_null<T>(a.grad_input);
  if constexpr (kBf16Rows<E, T>) {
    if (cl) {
      const int64_t C = a.c;
      parallel_rows(a.n * a.s, C, [&](int64_t r0, int64_t r1) {
        const int64_t i0 = r0 * C;
        bf16_rows::grad_apply(
            E,
            x + i0,
            g + i0,
            y ? y + i0 : nullptr,
            gi + i0,
            r1 - r0,
            C,
            q.mean.data(),
            q.invstd.data(),
            q.k.data(),
            q.mg.data(),
            q.mgx.data());
      });
      return;
    }
  }
  // A large float32/float64 input gradient goes out with streaming stores, as the forward's
  // output does (16-bit ones are narrowed from a buffer on the stack).
  const bool stream = !kIs16Bit<T> && use_streaming_stores<T>(a.n * a.c * a.s);
  channel_runs(
      a.n, a.c, a.s, cl,
      [&](int64_t i0, int64_t len, int64_t c) {
        grad_pieces(x + i0, g + i0, y ? y + i0 : nullptr, gi + i0, len,
                    [&](const auto* xp, const auto* gp, const auto* yp, auto* gip, int64_t n,
                        int64_t off) {
                      if (c >= 0)
                        grad_apply_run<E, true, T>(xp, gp, yp, gip, n, q.at(c), &q.k[c],
                                                   &q.mg[c], &q.mgx[c], stream);
                      else
                        grad_apply_run<E, false, T>(xp, gp, yp, gip, n, q.at(off),
                                                    q.k.data() + off, q.mg.data() + off,
                                                    q.mgx.data() + off, stream);
                    });
      },
      stream);
}

template <BnEpilogue E, class T>
void batch_norm_backward(const BatchNormBackwardArgs& a) {
  using P = BnParam<T>;
  using A = LoopAcc<T>;
  const int64_t C = a.c;
  const bool cl = detail::batch_norm_walks_rows(a.input, a.s);
  const P *w = data_or_null<P>(a.weight), *mean = data_or_null<P>(a.save_mean), *invstd = data_or_null<P>(a.save_invstd);
  const size_t width = static_cast<size_t>(C);
  GradCoef<A> q;
  // Every array zero-padded to padded_channels(C) for the bf16 row kernels.
  const size_t padded = size_t(bf16_rows::padded_channels(C));
  q.mean.assign(mean, mean + C), q.invstd.assign(invstd, invstd + C);
  q.mean.resize(padded), q.invstd.resize(padded);
  if constexpr (E == BnEpilogue::Gelu) {
    // The forward's scale and shift, rounded to P as it rounded them.
    std::vector<P> scale, shift;
    fold_scale_shift<P>(C, mean, invstd, w, data_or_null<P>(a.bias), scale, shift);
    q.scale.assign(scale.begin(), scale.end());
    q.shift.assign(shift.begin(), shift.end());
  }
  std::vector<double> sg(width), sgx(width);
  // The residual's gradient is the masked gradient: written by the sums pass, it is then the
  // apply pass's input (one tensor read instead of grad_out and the output).
  T* gr = data_or_null<T>(a.grad_residual);
  if (gr)
    batch_norm_grad_sums<E, true, T>(a, cl, q, gr, sg.data(), sgx.data());
  else
    batch_norm_grad_sums<E, false, T>(a, cl, q, nullptr, sg.data(), sgx.data());
  P *gw = data_or_null<P>(a.grad_weight), *gb = data_or_null<P>(a.grad_bias);
  for (int64_t c = 0; c < C; ++c) gw[c] = P(sgx[c]), gb[c] = P(sg[c]);
  // grad_input = w * invstd * (g - mean(g) - xhat * mean(g * xhat)) in training; the batch
  // statistics terms vanish in eval mode, where they were constants. The coefficients are
  // computed in double and rounded once to A.
  const double count = double(a.n * a.s), keep = a.training ? 1.0 : 0.0;
  q.k.resize(padded), q.mg.resize(padded), q.mgx.resize(padded);
  for (int64_t c = 0; c < C; ++c) {
    q.k[c] = A(double(invstd[c]) * (w ? double(w[c]) : 1.0));
    q.mg[c] = A(keep * sg[c] / count);
    q.mgx[c] = A(keep * sgx[c] / count);
  }
  if (gr)
    batch_norm_grad_apply<BnEpilogue::None, T>(a, cl, gr, nullptr, q);
  else
    batch_norm_grad_apply<E, T>(a, cl, data_or_null<T>(a.grad_out), data_or_null<T>(a.output), q);
}

template <class T>
void batch_norm_backward_any(const BatchNormBackwardArgs& a) {
  switch (a.epilogue) {
    case BnEpilogue::None: return batch_norm_backward<BnEpilogue::None, T>(a);
    case BnEpilogue::Relu: return batch_norm_backward<BnEpilogue::Relu, T>(a);
    case BnEpilogue::AddRelu: return batch_norm_backward<BnEpilogue::AddRelu, T>(a);
    case BnEpilogue::Gelu: return batch_norm_backward<BnEpilogue::Gelu, T>(a);
  }
}

}  // namespace

void register_nn_cpu() {
  using namespace detail;
  batch_norm_forward_kernel.set(DeviceType::CPU, [](const BatchNormArgs& a) {
    visit_floating_storage(a.input.dtype(), [&]<class T>() { batch_norm_forward<T>(a); });
  });
  batch_norm_backward_kernel.set(DeviceType::CPU, [](const BatchNormBackwardArgs& a) {
    visit_floating_storage(a.input.dtype(), [&]<class T>() { batch_norm_backward_any<T>(a); });
  });
  register_row_norm_cpu();
  register_pool_cpu();
  register_resample_cpu();
#ifdef IGNIS_WITH_DNNL
  register_conv_cpu();
#endif
}

}  // namespace ignis::cpu
