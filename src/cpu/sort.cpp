// CPU kernels of sort/argsort and topk. Every row along `dim` is copied into a buffer of
// (value, index) pairs, NaNs are split off (they order as the largest value), and the rest is
// ordered by value with the index as tie-break, so results are stable and deterministic.
// Rows run in parallel; one row is sorted by one thread. topk with a small k instead scans
// the row once against its current k-th best (select_few), with no buffer of pairs.
#include <algorithm>
#include <utility>
#include <vector>

#include "core/tensor_impl.h"
#include "cpu/loops.h"
#include "kernels/convert.h"
#include "ops/index_kernels.h"

namespace ignis::cpu {
namespace {
using detail::make_plan;
using kernels::convert;
using kernels::opmath_t;

/// A view of t with sizes `shape` (t's strides), size 1 along dim: one element per row.
Tensor outer_view(const Tensor& t, Shape shape, int64_t dim) {
  shape[size_t(dim)] = 1;
  return detail::make_view(t, std::move(shape), t.strides(), t.storage_offset());
}

/// Puts the k first elements of [first, last) under cmp, in order, at the front.
template <class It, class Cmp>
void order_prefix(It first, It last, int64_t k, const Cmp& cmp) {
  const int64_t len = last - first;
  if (k <= 0 || len <= 0) return;
  if (k >= len) {
    std::sort(first, last, cmp);
  } else if (k * 8 < len) {
    std::partial_sort(first, first + k, last, cmp);
  } else {
    std::nth_element(first, first + k, last, cmp);
    std::sort(first, first + k, cmp);
  }
}

/// One row's (value, index) pairs: buf[0, m) non-NaN and buf[m, n) NaN, each in index order.
/// Arranges buf so that its first `want` entries are the first `want` of the row in
/// ascending (NaN last) or descending (NaN first) order, equal values by increasing index.
template <class P>
void order_row(std::vector<P>& buf, int64_t n, int64_t m, bool descending, int64_t want) {
  auto asc = [](const P& a, const P& b) {
    return a.first < b.first || (a.first == b.first && a.second < b.second);
  };
  auto desc = [](const P& a, const P& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  if (!descending) {
    order_prefix(buf.begin(), buf.begin() + m, std::min(want, m), asc);
  } else {
    if (m < n) std::rotate(buf.begin(), buf.begin() + m, buf.begin() + n);
    order_prefix(buf.begin() + (n - m), buf.begin() + n, want - (n - m), desc);
  }
}

/// topk's k at most this (and at most a quarter of the row) takes select_few.
constexpr int64_t kFewMax = 16;

/// The first `want` (<= kFewMax) of the row x[0], x[xsd], … (n values) in descending (NaN
/// first) or ascending (NaN last) order, equal values by increasing index, written best first
/// to best_v/best_i. One pass keeps the best `want` seen so far in order; since later indices
/// lose ties, a value enters only when strictly better than the current last one, so most of
/// a row is a comparison against that threshold, 16 values at a time where the row is
/// contiguous (a vectorised test that no value of the block can enter).
template <class T, class C>
void select_few(
    const T* x, int64_t n, int64_t xsd, bool descending, int64_t want, C* best_v, int64_t* best_i) {
  auto better = [descending](C v, C u) {
    const bool vn = kernels::is_nan(v), un = kernels::is_nan(u);
    return descending ? (vn && !un) || v > u : (!vn && un) || v < u;
  };
  int64_t count = 0;
  auto enter = [&](C v, int64_t j) {
    int64_t p = std::min(count, want - 1);
    while (p > 0 && better(v, best_v[p - 1])) {
      best_v[p] = best_v[p - 1];
      best_i[p] = best_i[p - 1];
      --p;
    }
    best_v[p] = v;
    best_i[p] = j;
    count = std::min(count + 1, want);
  };
  int64_t j = 0;
  for (; j < n && count < want; ++j) enter(C(x[j * xsd]), j);
  constexpr int kBlock = 16;
  while (j < n) {
    const C u = best_v[want - 1];
    if (descending && kernels::is_nan(u)) return;  // nothing is better than the NaNs held
    if (xsd == 1 && j + kBlock <= n && !kernels::is_nan(u)) {
      // A value can enter only if it compares above (descending) or below u, or is NaN
      // (which `better` then sorts out): !(v <= u) and !(v >= u) are true for both.
      int hit = 0;
      if (descending) {
#pragma omp simd reduction(| : hit)
        for (int t = 0; t < kBlock; ++t) hit |= int(!(C(x[j + t]) <= u));
      } else {
#pragma omp simd reduction(| : hit)
        for (int t = 0; t < kBlock; ++t) hit |= int(!(C(x[j + t]) >= u));
      }
      if (hit)
        for (int t = 0; t < kBlock; ++t)
          if (const C v = C(x[j + t]); better(v, best_v[want - 1])) enter(v, j + t);
      j += kBlock;
      continue;
    }
    if (const C v = C(x[j * xsd]); better(v, u)) enter(v, j);
    ++j;
  }
}

/// Sorts (want = n) or selects (want = k) every row of x along dim, writing `want` entries
/// per row into values (if defined) and indices.
void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
               bool descending, int64_t want) {
  const int64_t n = x.size(dim);
  if (x.numel() == 0 || want == 0) return;
  const bool with_values = values.defined();
  Tensor iv = outer_view(indices, x.sizes(), dim), xv = outer_view(x, x.sizes(), dim);
  Tensor vv = with_values ? outer_view(values, x.sizes(), dim) : Tensor();
  // Operands: [indices, x, values?].
  const ElementwisePlan p =
      with_values ? make_plan({&iv, &xv, &vv}, "sort") : make_plan({&iv, &xv}, "sort");
  const int64_t isd = indices.stride(dim), xsd = x.stride(dim);
  const int64_t vsd = with_values ? values.stride(dim) : 0;
  visit_dtype(x.dtype(), [&]<class T>() {
    using C = opmath_t<T>;
    using P = std::pair<C, int64_t>;
    cpu_for_each(
        p,
        [&](char* const* d, const int64_t* s, int64_t rows) {
          const bool few = want <= kFewMax && want * 4 <= n;
          std::vector<P> buf(few ? 0 : static_cast<size_t>(n));
          for (int64_t r = 0; r < rows; ++r) {
            int64_t* ir = reinterpret_cast<int64_t*>(d[0]) + r * s[0];
            const T* xr = reinterpret_cast<const T*>(d[1]) + r * s[1];
            if (few) {
              C best_v[kFewMax];
              int64_t best_i[kFewMax];
              select_few(xr, n, xsd, descending, want, best_v, best_i);
              for (int64_t j = 0; j < want; ++j) ir[j * isd] = best_i[j];
              if (with_values) {
                T* vr = reinterpret_cast<T*>(d[2]) + r * s[2];
                for (int64_t j = 0; j < want; ++j) vr[j * vsd] = convert<T>(best_v[j]);
              }
              continue;
            }
            int64_t m = 0, nan_at = n;
            for (int64_t j = 0; j < n; ++j) {
              const C v = C(xr[j * xsd]);
              if (kernels::is_nan(v))
                buf[size_t(--nan_at)] = P(v, j);
              else
                buf[size_t(m++)] = P(v, j);
            }
            std::reverse(buf.begin() + m, buf.end());  // NaNs back in index order
            order_row(buf, n, m, descending, want);
            for (int64_t j = 0; j < want; ++j) ir[j * isd] = buf[size_t(j)].second;
            if (with_values) {
              T* vr = reinterpret_cast<T*>(d[2]) + r * s[2];
              for (int64_t j = 0; j < want; ++j) vr[j * vsd] = convert<T>(buf[size_t(j)].first);
            }
          }
        },
        std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(n, 1)));
  });
}

void sort(const detail::SortArgs& a) {
  sort_rows(a.values, a.indices, a.x, a.dim, a.descending, a.x.size(a.dim));
}

void topk(const detail::TopkArgs& a) { sort_rows(a.values, a.indices, a.x, a.dim, a.largest, a.k); }
}  // namespace

void register_sort_cpu() {
  detail::sort_kernel.set(DeviceType::CPU, &sort);
  detail::topk_kernel.set(DeviceType::CPU, &topk);
}

}  // namespace ignis::cpu
