// CPU softmax / log_softmax and cumsum over a contiguous tensor viewed as (outer, dim, inner).
// softmax along a contiguous row (inner == 1) makes three passes over the row while it sits in
// cache: max, sum of exp(x - max) (softmax stores the exponentials), then the scaling. Float
// rows use kernels::fast_exp so the passes vectorise; on x86 the loops are also compiled for
// AVX2+FMA and for AVX-512 and picked at run time (cpu_has_avx2, use_avx512).
// Along another dim the same passes run over tiles of `inner` columns, vectorised across them.
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "cpu/cpu_features.h"  // cpu_has_avx2, use_avx512
#include "kernels/convert.h"
#include "kernels/unary_ops.h"  // Exp
#include "ops/reduce_kernels.h"

namespace ignis::cpu {
namespace {
using detail::CumsumArgs;
using detail::SoftmaxArgs;
using kernels::opmath_t;

constexpr int64_t kTile = 1024;      // columns per tile along a strided dim (4 KiB of floats)
constexpr int64_t kSumBlock = 1024;  // float partial sums are folded into double this often

/// e^x as the exp op computes it: fast_exp for float, libm for double.
constexpr kernels::Exp exp_of{};

/// Rows [begin, end) of a (rows, D) softmax along contiguous rows. Always inlined into the
/// per-ISA wrappers below (softmax_base / softmax_avx2), so its loops are vectorised for each.
template <class T, bool kLog>
[[gnu::always_inline]] inline void softmax_rows_impl(const SoftmaxArgs& a, int64_t begin,
                                                     int64_t end) {
  using C = opmath_t<T>;
  constexpr bool kStoreExp = std::is_same_v<T, C>;  // exp values fit the output exactly
  const int64_t D = a.dim;
  const T* in = reinterpret_cast<const T*>(a.in);
  T* out = reinterpret_cast<T*>(a.out);
  constexpr int kL = 16;
  for (int64_t row = begin; row < end; ++row) {
    const T* x = in + row * D;
    T* y = out + row * D;
    // Pass 1: max (NaN is not needed here: it reaches every output through the sum).
    C lanes[kL];
    for (int j = 0; j < kL; ++j) lanes[j] = -std::numeric_limits<C>::infinity();
    int64_t i = 0;
    for (; i + kL <= D; i += kL) {
#pragma omp simd
      for (int j = 0; j < kL; ++j) {
        const C v = C(x[i + j]);
        lanes[j] = v > lanes[j] ? v : lanes[j];
      }
    }
    C m = -std::numeric_limits<C>::infinity();
    for (; i < D; ++i) m = C(x[i]) > m ? C(x[i]) : m;
    for (int j = 0; j < kL; ++j) m = lanes[j] > m ? lanes[j] : m;
    // Pass 2: sum of exp(x - m), in blocks of float partial sums folded into double.
    double total = 0;
    for (int64_t b0 = 0; b0 < D; b0 += kSumBlock) {
      const int64_t b1 = std::min(D, b0 + kSumBlock);
      C s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t k = b0; k < b1; ++k) {
        const C e = exp_of(C(x[k]) - m);
        if constexpr (kStoreExp && !kLog) y[k] = e;
        s += e;
      }
      total += double(s);
    }
    if (a.lse) a.lse[row] = double(m) + std::log(total);
    // Pass 3: scale, or subtract the log of the sum.
    if constexpr (kLog) {
      const C shift = C(std::log(total));
#pragma omp simd
      for (int64_t k = 0; k < D; ++k) y[k] = T((C(x[k]) - m) - shift);
    } else {
      const C scale = C(1.0 / total);
      if constexpr (kStoreExp) {
#pragma omp simd
        for (int64_t k = 0; k < D; ++k) y[k] = y[k] * scale;
      } else {
#pragma omp simd
        for (int64_t k = 0; k < D; ++k) y[k] = T(exp_of(C(x[k]) - m) * scale);
      }
    }
  }
}

/// Softmax along a strided dim: tiles of up to kTile columns of one outer index, three passes
/// over the dim, vectorised across the tile (exponentials stored in the output when its type
/// holds them exactly, else recomputed in the last pass). Items [begin, end) are
/// (outer index, tile) pairs.
template <class T, bool kLog>
[[gnu::always_inline]] inline void softmax_columns_impl(const SoftmaxArgs& a, int64_t begin,
                                                        int64_t end) {
  using C = opmath_t<T>;
  constexpr bool kStoreExp = std::is_same_v<T, C> && !kLog;
  const int64_t D = a.dim, inner = a.inner, tiles = (inner + kTile - 1) / kTile;
  const T* in = reinterpret_cast<const T*>(a.in);
  T* out = reinterpret_cast<T*>(a.out);
  C mx[kTile], sm[kTile];
  for (int64_t item = begin; item < end; ++item) {
    const int64_t o = item / tiles, c0 = (item % tiles) * kTile, w = std::min(kTile, inner - c0);
    const T* x = in + o * D * inner + c0;
    T* y = out + o * D * inner + c0;
    for (int64_t j = 0; j < w; ++j) mx[j] = -std::numeric_limits<C>::infinity(), sm[j] = 0;
    for (int64_t d = 0; d < D; ++d) {
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        const C v = C(x[d * inner + j]);
        mx[j] = v > mx[j] ? v : mx[j];
      }
    }
    for (int64_t d = 0; d < D; ++d) {
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        const C e = exp_of(C(x[d * inner + j]) - mx[j]);
        if constexpr (kStoreExp) y[d * inner + j] = e;
        sm[j] += e;
      }
    }
    for (int64_t j = 0; j < w; ++j) sm[j] = kLog ? C(std::log(double(sm[j]))) : C(1) / sm[j];
    for (int64_t d = 0; d < D; ++d) {
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        if constexpr (kStoreExp) {
          y[d * inner + j] = y[d * inner + j] * sm[j];
        } else {
          const C v = C(x[d * inner + j]) - mx[j];
          y[d * inner + j] = T(kLog ? v - sm[j] : exp_of(v) * sm[j]);
        }
      }
    }
  }
}

// Each loop compiled for the baseline ISA and, on x86, for AVX2+FMA, chosen at run time.
using ItemsFn = void (*)(const SoftmaxArgs&, int64_t, int64_t);
/// Items [b, e) of either loop; inlined into each per-ISA wrapper below.
template <class T, bool kLog, bool kRows>
[[gnu::always_inline]] inline void softmax_items(const SoftmaxArgs& a, int64_t b, int64_t e) {
  if constexpr (kRows) softmax_rows_impl<T, kLog>(a, b, e);
  else softmax_columns_impl<T, kLog>(a, b, e);
}
template <class T, bool kLog, bool kRows>
void softmax_base(const SoftmaxArgs& a, int64_t b, int64_t e) {
  softmax_items<T, kLog, kRows>(a, b, e);
}
#if defined(__x86_64__) && defined(__GNUC__)
template <class T, bool kLog, bool kRows>
[[gnu::target("avx2,fma")]] void softmax_avx2(const SoftmaxArgs& a, int64_t b, int64_t e) {
  softmax_items<T, kLog, kRows>(a, b, e);
}
// And for AVX-512 (16 floats a vector; the exponentials are most of a row's work): the rows
// of [4096, 4096] take 10.6 ms at one thread with AVX2 against PyTorch's 8.2 with its AVX-512
// kernels.
template <class T, bool kLog, bool kRows>
[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl,fma")]] void softmax_avx512(
    const SoftmaxArgs& a, int64_t b, int64_t e) {
  softmax_items<T, kLog, kRows>(a, b, e);
}
#endif

template <class T, bool kLog, bool kRows>
ItemsFn pick() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (use_avx512()) return &softmax_avx512<T, kLog, kRows>;
  if (cpu_has_avx2()) return &softmax_avx2<T, kLog, kRows>;
#endif
  return &softmax_base<T, kLog, kRows>;
}

template <class T, bool kLog>
void softmax_typed(const SoftmaxArgs& a) {
  const int64_t work_per_row = std::max<int64_t>(a.dim, 1);
  if (a.inner == 1) {
    const ItemsFn rows = pick<T, kLog, true>();
    detail::parallel_for(0, a.outer, std::max<int64_t>(1, detail::kGrainSize / work_per_row),
                         [&](int64_t b, int64_t e) { rows(a, b, e); });
    return;
  }
  IGNIS_CHECK(!a.lse, Error, "[softmax] log-sum-exps are written for contiguous rows only");
  const ItemsFn columns = pick<T, kLog, false>();
  const int64_t items = a.outer * ((a.inner + kTile - 1) / kTile);
  detail::parallel_for(0, items, std::max<int64_t>(1, detail::kGrainSize / (work_per_row * kTile)),
                       [&](int64_t b, int64_t e) { columns(a, b, e); });
}

void softmax_kernel(const SoftmaxArgs& a) {
  visit_dtype(a.dtype, [&]<class T>() {
    if constexpr (kernels::is_floating_v<T>) {
      if (a.log) softmax_typed<T, true>(a);
      else softmax_typed<T, false>(a);
    } else {
      throw DTypeError(std::string("[softmax] not supported for ") + dtype_name(a.dtype));
    }
  });
}

/// Running sums along the dim; floats accumulate in double, integers in wrapping int64.
template <class T, class O>
void cumsum_typed(const CumsumArgs& a) {
  using Acc = std::conditional_t<kernels::is_floating_v<T>, double, uint64_t>;
  const T* in = reinterpret_cast<const T*>(a.in);
  O* out = reinterpret_cast<O*>(a.out);
  using Sum = std::conditional_t<kernels::is_floating_v<T>, double, int64_t>;
  auto add = [](Acc& acc, T v) {
    if constexpr (kernels::is_floating_v<T>)
      acc += double(opmath_t<T>(v));
    else
      acc += uint64_t(int64_t(v));
  };
  const int64_t D = a.dim, inner = a.inner, tiles = (inner + kTile - 1) / kTile;
  if (inner == 1) {
    // Along the last dim each row is one serial chain of adds; kRows rows go side by side
    // (each still summed in order) so their chains overlap.
    constexpr int64_t kRows = 8;
    const int64_t groups = (a.outer + kRows - 1) / kRows;
    const int64_t grain =
        std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(D * kRows, 1));
    detail::parallel_for(0, groups, grain, [&](int64_t b, int64_t e) {
      Acc acc[kRows];
      for (int64_t g = b; g < e; ++g) {
        const int64_t o0 = g * kRows, m = std::min(kRows, a.outer - o0);
        const T* x = in + o0 * D;
        O* y = out + o0 * D;
        for (int64_t k = 0; k < m; ++k) acc[k] = 0;
        for (int64_t d = 0; d < D; ++d)
          for (int64_t k = 0; k < m; ++k) {
            add(acc[k], x[k * D + d]);
            y[k * D + d] = kernels::convert<O>(Sum(acc[k]));
          }
      }
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(D * kTile, 1));
  detail::parallel_for(0, a.outer * tiles, grain, [&](int64_t b, int64_t e) {
    Acc acc[kTile];
    for (int64_t item = b; item < e; ++item) {
      const int64_t o = item / tiles, c0 = (item % tiles) * kTile, w = std::min(kTile, inner - c0);
      const T* x = in + o * D * inner + c0;
      O* y = out + o * D * inner + c0;
      for (int64_t j = 0; j < w; ++j) acc[j] = 0;
      for (int64_t d = 0; d < D; ++d) {
        for (int64_t j = 0; j < w; ++j) {
          add(acc[j], x[d * inner + j]);
          y[d * inner + j] = kernels::convert<O>(Sum(acc[j]));
        }
      }
    }
  });
}

void cumsum_kernel(const CumsumArgs& a) {
  visit_dtype(a.in_dtype, [&]<class T>() {
    if constexpr (kernels::is_floating_v<T>) cumsum_typed<T, T>(a);
    else cumsum_typed<T, int64_t>(a);
  });
}
}  // namespace

void register_softmax_cpu() {
  detail::softmax_kernel.set(DeviceType::CPU, &softmax_kernel);
  detail::cumsum_kernel.set(DeviceType::CPU, &cumsum_kernel);
}

}  // namespace ignis::cpu
