// The CPU reduction engine: walks a ReducePlan (Note [Reduce plan]) with any reduction functor.
// A functor says how to start (identity), fold one element (reduce, given its position in the
// reduced index space), merge two partial results (combine, independent of order: index ops
// break ties by index) and store a result (write). The engine picks one of two loops:
//  - per output ("inner"): each output folds its reduced elements run by run along the
//    innermost reduced dim; contiguous runs use kLanes independent accumulators so the fold
//    vectorises. Parallel over outputs, or, for a few huge reductions, over pieces of each.
//  - across outputs ("outer"): when the innermost kept dim is contiguous and the reduced ones
//    are not (sum over dim 0 of a matrix), a tile of outputs is folded row by row, vectorised
//    over the tile. Parallel over tiles, splitting the reduction too when tiles are few.
// Nothing here throws: it runs inside OpenMP regions.
#pragma once

#include <omp.h>

#include <algorithm>
#include <concepts>
#include <vector>

#include "core/parallel.h"
#include "cpu/cpu_features.h"  // cpu_has_avx2
#include "ops/reduce_kernels.h"

namespace ignis::cpu {

using detail::ReducePlan;

/// Independent accumulators per contiguous run (enough for 4 AVX2 vectors of doubles).
inline constexpr int kLanes = 16;
/// Outputs per tile in the outer loop: whole rows of up to 4096 (long reads that the hardware
/// prefetcher follows), while the tile of accumulators stays within 64 KiB of stack.
template <class Acc>
constexpr int64_t max_tile() {
  return std::min<int64_t>(4096, int64_t(65536 / sizeof(Acc)) / 16 * 16);
}

/// Walks a multi-index over n dims (outermost first) keeping offsets along two stride sets.
struct DimCounter {
  int n = 0;
  const int64_t* sizes = nullptr;
  const int64_t* s1 = nullptr;
  const int64_t* s2 = nullptr;
  int64_t idx[detail::kMaxPlanDims] = {};
  int64_t off1 = 0, off2 = 0;

  DimCounter(int n_, const int64_t* sizes_, const int64_t* s1_, const int64_t* s2_)
      : n(n_), sizes(sizes_), s1(s1_), s2(s2_ ? s2_ : s1_) {}
  /// Positions the counter at flat (row-major) index i.
  void seek(int64_t i) {
    off1 = off2 = 0;
    for (int d = n - 1; d >= 0; --d) {
      idx[d] = i % sizes[d];
      i /= sizes[d];
      off1 += idx[d] * s1[d];
      off2 += idx[d] * s2[d];
    }
  }
  void next() {
    for (int d = n - 1; d >= 0; --d) {
      off1 += s1[d];
      off2 += s2[d];
      if (++idx[d] < sizes[d]) return;
      off1 -= idx[d] * s1[d];
      off2 -= idx[d] * s2[d];
      idx[d] = 0;
    }
  }
};

/// Calls f(offset, length, position) for each run of the innermost reduced dim covering the
/// reduced positions [begin, end); offset is in input elements from the output's base.
template <class F>
void for_each_run(const ReducePlan& p, int64_t begin, int64_t end, const F& f) {
  if (begin >= end) return;
  const int last = p.nred - 1;
  const int64_t len = p.red_sizes[last], stride = p.red_strides[last];
  DimCounter outer(last, p.red_sizes, p.red_strides, nullptr);
  outer.seek(begin / len);
  int64_t j = begin % len;
  for (int64_t pos = begin; pos < end;) {
    const int64_t n = std::min(len - j, end - pos);
    f(outer.off1 + j * stride, n, pos);
    pos += n;
    j = 0;
    outer.next();
  }
}

/// Functors may declare a cheaper Lane type (float partial sums for a double total): elements
/// are then folded into lanes, and each lane into the accumulator every Op::kFoldEvery elements.
template <class Op>
concept HasLanes = requires { typename Op::Lane; };

/// Functors may fold a whole contiguous run of at least Op::kRunLanes elements themselves
/// (fold_run(x, n, pos) returning the run's Acc), when the lanes of Acc would not vectorise.
template <class Op>
concept HasRunFold = requires(const Op& op, const typename Op::In* x) {
  { op.fold_run(x, int64_t(0), int64_t(0)) } -> std::same_as<typename Op::Acc>;
};

/// Folds a contiguous run through Op's lanes (see HasLanes): blocks of kFoldEvery * kL
/// elements into kL lane partials, each block's lanes then folded into acc.
template <class Op>
[[gnu::always_inline]] inline void fold_lanes_impl(const Op& op, typename Op::Acc& acc,
                                                   const typename Op::In* x, int64_t n) {
  using Lane = typename Op::Lane;
  constexpr int kL = 2 * kLanes;
  for (int64_t b = 0; b < n; b += Op::kFoldEvery * kL) {
    const int64_t e = std::min(n, b + Op::kFoldEvery * kL);
    Lane lanes[kL] = {};
    int64_t i = b;
    for (; i + kL <= e; i += kL) {
#pragma omp simd
      for (int j = 0; j < kL; ++j) op.lane_reduce(lanes[j], x[i + j]);
    }
    for (; i < e; ++i) op.lane_reduce(lanes[0], x[i]);
    for (int j = 0; j < kL; ++j) op.fold(acc, lanes[j]);
  }
}
template <class Op>
void fold_lanes_base(const Op& op, typename Op::Acc& acc, const typename Op::In* x, int64_t n) {
  fold_lanes_impl(op, acc, x, n);
}
#if defined(__x86_64__) && defined(__GNUC__)
template <class Op>
[[gnu::target("avx2,fma")]] void fold_lanes_avx2(const Op& op, typename Op::Acc& acc,
                                                 const typename Op::In* x, int64_t n) {
  fold_lanes_impl(op, acc, x, n);
}
#endif

/// Folds n elements x[0], x[stride], … (positions pos, pos + 1, …) into acc.
template <class Op>
inline void reduce_run(const Op& op, typename Op::Acc& acc, const typename Op::In* x, int64_t n,
                       int64_t stride, int64_t pos) {
  using Acc = typename Op::Acc;
  if (stride != 1 || n < 2 * kLanes) {
    for (int64_t i = 0; i < n; ++i) op.reduce(acc, x[i * stride], pos + i);
    return;
  }
  if constexpr (HasRunFold<Op>) {
    static_assert(
        Op::kRunLanes <= 2 * kLanes, "runs folded here have at least 2 * kLanes elements");
    op.combine(acc, op.fold_run(x, n, pos));
  } else if constexpr (HasLanes<Op>) {
#if defined(__x86_64__) && defined(__GNUC__)
    static const auto fold = cpu_has_avx2() ? &fold_lanes_avx2<Op> : &fold_lanes_base<Op>;
    fold(op, acc, x, n);
#else
    fold_lanes_base(op, acc, x, n);
#endif
  } else {
    Acc lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = op.identity();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
      for (int j = 0; j < kLanes; ++j) op.reduce(lanes[j], x[i + j], pos + i + j);
    }
    for (; i < n; ++i) op.reduce(acc, x[i], pos + i);
    for (int j = 0; j < kLanes; ++j) op.combine(acc, lanes[j]);
  }
}

inline int64_t max_threads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

/// One fold per output; see the file comment.
template <class Op>
void reduce_per_output(const ReducePlan& p, const Op& op) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  const In* in = reinterpret_cast<const In*>(p.in);
  const int64_t R = p.num_reduced, N = p.num_outputs;
  const int64_t run_stride = p.red_strides[p.nred - 1];
  const int64_t threads = max_threads();
  auto fold = [&](int64_t in_off, int64_t begin, int64_t end) {
    Acc acc = op.identity();
    for_each_run(p, begin, end, [&](int64_t off, int64_t n, int64_t pos) {
      reduce_run(op, acc, in + in_off + off, n, run_stride, pos);
    });
    return acc;
  };
  if (N < threads && R >= 4 * detail::kGrainSize) {
    // Few long reductions: split each one into ordered pieces, one per thread.
    const int64_t pieces = std::min(threads, R / detail::kGrainSize);
    std::vector<Acc> partial(size_t(pieces), op.identity());
    DimCounter kept(p.nkept, p.kept_sizes, p.kept_strides, p.out_strides);
    kept.seek(0);
    for (int64_t o = 0; o < N; ++o, kept.next()) {
      detail::parallel_for(0, pieces, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c)
          partial[size_t(c)] = fold(kept.off1, R * c / pieces, R * (c + 1) / pieces);
      });
      Acc acc = partial[0];
      for (int64_t c = 1; c < pieces; ++c) op.combine(acc, partial[size_t(c)]);
      op.write(p, kept.off2, acc);
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(R, 1));
  if (p.nred == 1 && R > 0 && R < 2 * kLanes) {
    // One short run per output (mean over a ResNet's last 4x4 maps): reduce_run would fold
    // each one as a single serial chain, so kBatch outputs are folded side by side instead,
    // each in the same order as alone (the same results), their chains interleaved. (An
    // empty reduction keeps the loop below, which never forms a pointer into no storage.)
    constexpr int kBatch = 8;
    detail::parallel_for(0, N, grain, [&](int64_t b, int64_t e) {
      DimCounter kept(p.nkept, p.kept_sizes, p.kept_strides, p.out_strides);
      kept.seek(b);
      for (int64_t o = b; o < e; o += kBatch) {
        const int m = int(std::min<int64_t>(kBatch, e - o));
        const In* src[kBatch];
        int64_t dst[kBatch];
        Acc acc[kBatch];
        for (int k = 0; k < m; ++k, kept.next())
          src[k] = in + kept.off1, dst[k] = kept.off2, acc[k] = op.identity();
        for (int64_t j = 0; j < R; ++j)
          for (int k = 0; k < m; ++k) op.reduce(acc[k], src[k][j * run_stride], j);
        for (int k = 0; k < m; ++k) op.write(p, dst[k], acc[k]);
      }
    });
    return;
  }
  detail::parallel_for(0, N, grain, [&](int64_t b, int64_t e) {
    DimCounter kept(p.nkept, p.kept_sizes, p.kept_strides, p.out_strides);
    kept.seek(b);
    for (int64_t o = b; o < e; ++o, kept.next()) op.write(p, kept.off2, fold(kept.off1, 0, R));
  });
}

/// Tiles of outputs along the contiguous innermost kept dim; see the file comment.
template <class Op>
void reduce_across_outputs(const ReducePlan& p, const Op& op) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  const In* in = reinterpret_cast<const In*>(p.in);
  const int64_t R = p.num_reduced, N = p.num_outputs;
  const int last = p.nkept - 1;
  const int64_t C = p.kept_sizes[last], out_stride = p.out_strides[last];
  const int64_t run_stride = p.red_strides[p.nred - 1];
  const int64_t rows = N / C, threads = max_threads();
  // Tiles as wide as fit in L1, for long contiguous reads; when there are fewer tiles than
  // threads, the reduction is split too, so each thread still streams whole tile rows.
  constexpr int64_t kMaxTile = max_tile<Acc>();
  const int64_t tw = std::min(C, kMaxTile);
  const int64_t ntiles = (C + tw - 1) / tw, tiles = rows * ntiles;
  int64_t split = 1;
  if (tiles < threads && R >= 64)
    split = std::min((threads + tiles - 1) / tiles, R / 32);
  std::vector<Acc> partial(split > 1 ? size_t(tiles * split * tw) : 0);
  const int64_t work = tw * std::max<int64_t>(R / split, 1);
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / work);
  detail::parallel_for(0, tiles * split, grain, [&](int64_t b, int64_t e) {
    DimCounter row(last, p.kept_sizes, p.kept_strides, p.out_strides);
    Acc tile[kMaxTile];
    for (int64_t item = b; item < e; ++item) {
      const int64_t w = item / split, s = item % split;
      const int64_t c0 = (w % ntiles) * tw, cw = std::min(tw, C - c0);
      row.seek(w / ntiles);
      for (int64_t c = 0; c < cw; ++c) tile[c] = op.identity();
      const In* base = in + row.off1 + c0;
      if constexpr (HasLanes<Op>) {
        // Rows go into a tile of lanes, folded into the accumulators every kFoldEvery rows.
        typename Op::Lane lanes[kMaxTile];
        int64_t since_fold = 0;
        auto fold_tile = [&] {
          for (int64_t c = 0; c < cw; ++c) op.fold(tile[c], lanes[c]), lanes[c] = {};
          since_fold = 0;
        };
        for (int64_t c = 0; c < cw; ++c) lanes[c] = {};
        for_each_run(p, R * s / split, R * (s + 1) / split, [&](int64_t off, int64_t n, int64_t) {
          int64_t k = 0;
          // Four rows per pass: four read streams, one read-modify-write of the lanes.
          for (; k + 4 <= n; k += 4) {
            const In* x0 = base + off + k * run_stride;
            const In *x1 = x0 + run_stride, *x2 = x1 + run_stride, *x3 = x2 + run_stride;
#pragma omp simd
            for (int64_t c = 0; c < cw; ++c) {
              typename Op::Lane l = lanes[c];
              op.lane_reduce(l, x0[c]);
              op.lane_reduce(l, x1[c]);
              op.lane_reduce(l, x2[c]);
              op.lane_reduce(l, x3[c]);
              lanes[c] = l;
            }
            if ((since_fold += 4) >= Op::kFoldEvery) fold_tile();
          }
          for (; k < n; ++k) {
            const In* x = base + off + k * run_stride;
#pragma omp simd
            for (int64_t c = 0; c < cw; ++c) op.lane_reduce(lanes[c], x[c]);
            if (++since_fold >= Op::kFoldEvery) fold_tile();
          }
        });
        fold_tile();
      } else {
        for_each_run(p, R * s / split, R * (s + 1) / split, [&](int64_t off, int64_t n, int64_t pos) {
          for (int64_t k = 0; k < n; ++k) {
            const In* x = base + off + k * run_stride;
#pragma omp simd
            for (int64_t c = 0; c < cw; ++c) op.reduce(tile[c], x[c], pos + k);
          }
        });
      }
      if (split == 1) {
        for (int64_t c = 0; c < cw; ++c) op.write(p, row.off2 + (c0 + c) * out_stride, tile[c]);
      } else {
        std::copy(tile, tile + cw, partial.begin() + (w * split + s) * tw);
      }
    }
  });
  if (split == 1) return;
  detail::parallel_for(0, tiles, 1, [&](int64_t b, int64_t e) {
    DimCounter row(last, p.kept_sizes, p.kept_strides, p.out_strides);
    for (int64_t w = b; w < e; ++w) {
      const int64_t c0 = (w % ntiles) * tw, cw = std::min(tw, C - c0);
      row.seek(w / ntiles);
      for (int64_t c = 0; c < cw; ++c) {
        Acc acc = partial[size_t(w * split * tw + c)];
        for (int64_t s = 1; s < split; ++s) op.combine(acc, partial[size_t((w * split + s) * tw + c)]);
        op.write(p, row.off2 + (c0 + c) * out_stride, acc);
      }
    }
  });
}

/// Runs op over the plan, choosing the loop from the innermost strides.
template <class Op>
void run_reduction(const ReducePlan& p, const Op& op) {
  if (p.num_outputs == 0) return;
  const bool reduced_contiguous = p.red_strides[p.nred - 1] == 1;
  const bool kept_contiguous = p.kept_strides[p.nkept - 1] == 1 && p.kept_sizes[p.nkept - 1] > 1;
  if (!reduced_contiguous && kept_contiguous && p.num_reduced > 0) reduce_across_outputs(p, op);
  else reduce_per_output(p, op);
}

}  // namespace ignis::cpu
