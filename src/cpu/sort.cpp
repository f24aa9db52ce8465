// CPU kernels of sort/argsort and topk. Every row along `dim` is copied into a buffer of
// (value, index) pairs, NaNs are split off (they order as the largest value), and the rest is
// ordered by value with the index as tie-break, so results are stable and deterministic.
// Rows run in parallel; one row is sorted by one thread.
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
          std::vector<P> buf(static_cast<size_t>(n));
          for (int64_t r = 0; r < rows; ++r) {
            int64_t* ir = reinterpret_cast<int64_t*>(d[0]) + r * s[0];
            const T* xr = reinterpret_cast<const T*>(d[1]) + r * s[1];
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
