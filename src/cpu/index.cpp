// CPU kernels of the indexing family: index scans (bounds checks before any write), gather
// (and index_select through it), scatter / scatter_add (and index_add through it),
// masked_select and tril/triu. Front ends have validated every argument and index value.
//
// Loop structure (gather/scatter): the operands are viewed with size 1 along `dim`, giving an
// "outer" elementwise plan; each outer position then walks the index along dim in order.
// Distinct outer positions write distinct destination elements, so threads never collide and
// each destination sees its writes in index order (deterministic last-write / sums).
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/tensor_impl.h"
#include "cpu/loops.h"
#include "kernels/convert.h"
#include "kernels/scatter_ops.h"
#include "ops/index_kernels.h"

namespace ignis::cpu {
namespace {
using detail::make_plan;
using detail::make_view;
using kernels::convert;
using kernels::opmath_t;
using detail::visit_index;

/// A view of t with sizes `shape` (t's strides), size 1 along dim.
Tensor outer_view(const Tensor& t, Shape shape, int64_t dim) {
  shape[size_t(dim)] = 1;
  return make_view(t, std::move(shape), t.strides(), t.storage_offset());
}

// ---- index scan --------------------------------------------------------------------------
// One unsigned maximum per element checks both bounds: a negative index becomes a huge
// unsigned value. Four accumulators keep the (memory-bound) loop free of a dependency chain.
template <class I>
uint64_t umax_run(const I* x, int64_t stride, int64_t n) {
  uint64_t m0 = 0, m1 = 0, m2 = 0, m3 = 0;
  auto u = [](I v) { return uint64_t(int64_t(v)); };
  int64_t i = 0;
  if (stride == 1) {
    for (; i + 4 <= n; i += 4) {
      m0 = std::max(m0, u(x[i])), m1 = std::max(m1, u(x[i + 1]));
      m2 = std::max(m2, u(x[i + 2])), m3 = std::max(m3, u(x[i + 3]));
    }
  }
  for (; i < n; ++i) m0 = std::max(m0, u(x[i * stride]));
  return std::max(std::max(m0, m1), std::max(m2, m3));
}

detail::IndexScan index_scan(const Tensor& index, int64_t hi) {
  detail::IndexScan r;
  if (index.numel() == 0) return r;
  const ElementwisePlan p = make_plan({&index}, "index_scan");
  uint64_t umax = 0;
  visit_index(index.dtype(), [&]<class I>() {
    detail::parallel_for(0, p.numel, detail::kGrainSize, [&](int64_t b, int64_t e) {
      uint64_t local = 0;
      walk_range(p, b, e, [&](char* const* d, const int64_t* s, int64_t n) {
        local = std::max(local, umax_run(reinterpret_cast<const I*>(d[0]), s[0], n));
      });
#pragma omp critical(ignis_index_scan)
      umax = std::max(umax, local);
    });
    if (umax < uint64_t(hi)) {
      r.max = int64_t(umax);
      return;
    }
    // Error path only: find the first offending value in row-major order, serially.
    walk_range(p, 0, p.numel, [&](char* const* d, const int64_t* s, int64_t n) {
      const I* x = reinterpret_cast<const I*>(d[0]);
      for (int64_t i = 0; i < n && !r.first_bad; ++i)
        if (x[i * s[0]] < 0 || x[i * s[0]] >= hi) r.first_bad = int64_t(x[i * s[0]]);
    });
  });
  return r;
}

// ---- gather --------------------------------------------------------------------------------
void gather(const detail::GatherArgs& a) {
  if (a.out.numel() == 0) return;
  const int64_t dim = a.dim;
  // x restrided to index's shape with stride 0 along dim: the base of each gathered line.
  Shape xst = a.x.strides();
  xst[size_t(dim)] = 0;
  Tensor xr = make_view(a.x, a.index.sizes(), xst, a.x.storage_offset());
  const ElementwisePlan p = make_plan({&a.out, &xr, &a.index}, "gather");
  const int64_t xsd = a.x.stride(dim);
  visit_dtype(a.x.dtype(), [&]<class T>() {
    visit_index(a.index.dtype(), [&]<class I>() {
      cpu_for_each(p, [&](char* const* d, const int64_t* s, int64_t n) {
        T* o = reinterpret_cast<T*>(d[0]);
        const T* xb = reinterpret_cast<const T*>(d[1]);
        const I* ix = reinterpret_cast<const I*>(d[2]);
        if (s[2] == 0) {  // one index for the whole run: copy a (strided) line
          const T* src = xb + int64_t(ix[0]) * xsd;
          if (s[0] == 1 && s[1] == 1)
            std::memcpy(o, src, size_t(n) * sizeof(T));
          else
            for (int64_t i = 0; i < n; ++i) o[i * s[0]] = src[i * s[1]];
        } else if (s[0] == 1 && s[1] == 0) {  // the run goes along dim
          for (int64_t i = 0; i < n; ++i) o[i] = xb[int64_t(ix[i * s[2]]) * xsd];
        } else {
          for (int64_t i = 0; i < n; ++i) o[i * s[0]] = xb[i * s[1] + int64_t(ix[i * s[2]]) * xsd];
        }
      });
    });
  });
}

// ---- scatter -------------------------------------------------------------------------------
using kernels::ScatterAdd;
using kernels::ScatterAssign;

/// The loop over one run of n outer positions and the D entries along dim. ptrs: [self,
/// index, src?]; s: their strides along the run. Each destination receives its updates in
/// increasing dim order. (Splitting one position's updates between threads by destination
/// range was tried: the unpredictable range test cost more than the second thread gained.)
template <bool HasSrc, class T, class I, class Op>
void scatter_run(char* const* d, const int64_t* s, int64_t n, int64_t D, const int64_t* dim_st,
                 T value, const Op& op) {
  T* self = reinterpret_cast<T*>(d[0]);
  const I* ix = reinterpret_cast<const I*>(d[1]);
  const T* src = HasSrc ? reinterpret_cast<const T*>(d[2]) : nullptr;
  const int64_t s0 = s[0], s1 = s[1], s2 = HasSrc ? s[2] : 0;
  const int64_t ssd = dim_st[0], isd = dim_st[1], srcsd = dim_st[2];
  auto val = [&](int64_t off) -> T {
    if constexpr (HasSrc)
      return src[off];
    else
      return value;
  };
  if (n == 1 || (s1 != 0 && std::abs(s1) > std::abs(isd))) {
    // Along dim inside: each position's D updates in a row (1-D, or dim the fastest).
    for (int64_t i = 0; i < n; ++i) {
      T* sb = self + i * s0;
      const I* ib = ix + i * s1;
      const int64_t so = i * s2;
      if (isd == 1 && (!HasSrc || srcsd == 1)) {
        for (int64_t j = 0; j < D; ++j) op(sb[int64_t(ib[j]) * ssd], val(so + j));
      } else {
        for (int64_t j = 0; j < D; ++j) op(sb[int64_t(ib[j * isd]) * ssd], val(so + j * srcsd));
      }
    }
  } else if (s1 == 0) {
    // One index per j for the whole run (index_add): add whole lines.
    for (int64_t j = 0; j < D; ++j) {
      T* dst = self + int64_t(ix[j * isd]) * ssd;
      if (HasSrc && s0 == 1 && s2 == 1) {
        const T* sp = src + j * srcsd;
        for (int64_t i = 0; i < n; ++i) op(dst[i], sp[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) op(dst[i * s0], val(i * s2 + j * srcsd));
      }
    }
  } else {
    for (int64_t j = 0; j < D; ++j)
      for (int64_t i = 0; i < n; ++i)
        op(self[i * s0 + int64_t(ix[i * s1 + j * isd]) * ssd], val(i * s2 + j * srcsd));
  }
}

template <bool HasSrc, class T, class I, class Op>
void scatter_typed(const detail::ScatterArgs& a, const ElementwisePlan& p, const Op& op) {
  const int64_t dim = a.dim, D = a.index.size(dim);
  const int64_t dim_st[3] = {a.self.stride(dim), a.index.stride(dim),
                             HasSrc ? a.src.stride(dim) : 0};
  T value{};
  if constexpr (!HasSrc) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      value = T(float(a.value.to_double()));
    else
      value = a.value.to<T>();
  }
  cpu_for_each(
      p,
      [&](char* const* d, const int64_t* s, int64_t n) {
        scatter_run<HasSrc, T, I>(d, s, n, D, dim_st, value, op);
      },
      std::max<int64_t>(1, detail::kGrainSize / D));
}

void scatter(const detail::ScatterArgs& a) {
  if (a.index.numel() == 0) return;
  const bool has_src = a.src.defined();
  Tensor self_v = outer_view(a.self, a.index.sizes(), a.dim);
  Tensor index_v = outer_view(a.index, a.index.sizes(), a.dim);
  Tensor src_v = has_src ? outer_view(a.src, a.index.sizes(), a.dim) : Tensor();
  const ElementwisePlan p = has_src ? make_plan({&self_v, &index_v, &src_v}, "scatter")
                                    : make_plan({&self_v, &index_v}, "scatter");
  visit_dtype(a.self.dtype(), [&]<class T>() {
    visit_index(a.index.dtype(), [&]<class I>() {
      auto run = [&](const auto& op) {
        if (has_src)
          scatter_typed<true, T, I>(a, p, op);
        else
          scatter_typed<false, T, I>(a, p, op);
      };
      const auto alpha = a.alpha.to<opmath_t<T>>();
      if (a.reduce == detail::ScatterReduce::Assign)
        run(ScatterAssign<T>{});
      else if (alpha == opmath_t<T>(1))
        run(ScatterAdd<T, false>{alpha});
      else
        run(ScatterAdd<T, true>{alpha});
    });
  });
}

// ---- masked_select ---------------------------------------------------------------------------
Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const ElementwisePlan p = make_plan({&mask, &x}, "masked_select");
  const int64_t numel = p.numel;
  const int64_t nchunks = detail::num_threads_for(numel, detail::kGrainSize);
  const int64_t chunk = numel > 0 ? (numel + nchunks - 1) / nchunks : 0;
  std::vector<int64_t> start(size_t(nchunks) + 1, 0);
  // Pass 1: count the selected elements of each chunk; pass 2: copy them to their offsets.
  detail::parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t count = 0;
      walk_range(p, c * chunk, std::min(numel, (c + 1) * chunk),
                 [&](char* const* d, const int64_t* s, int64_t n) {
                   const bool* m = reinterpret_cast<const bool*>(d[0]);
                   for (int64_t i = 0; i < n; ++i) count += m[i * s[0]];
                 });
      start[size_t(c) + 1] = count;
    }
  });
  for (int64_t c = 0; c < nchunks; ++c) start[size_t(c) + 1] += start[size_t(c)];
  Tensor out = detail::make_tensor({start.back()}, x.dtype(), x.device());
  if (start.back() == 0) return out;
  visit_dtype(x.dtype(), [&]<class T>() {
    T* o = static_cast<T*>(out.data_ptr());
    detail::parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        T* w = o + start[size_t(c)];
        walk_range(p, c * chunk, std::min(numel, (c + 1) * chunk),
                   [&](char* const* d, const int64_t* s, int64_t n) {
                     const bool* m = reinterpret_cast<const bool*>(d[0]);
                     const T* xv = reinterpret_cast<const T*>(d[1]);
                     for (int64_t i = 0; i < n; ++i)
                       if (m[i * s[0]]) *w++ = xv[i * s[1]];
                   });
      }
    });
  });
  return out;
}

// ---- tril / triu ------------------------------------------------------------------------------
void trilu(const detail::TriluArgs& a) {
  const Tensor& x = a.x;
  const int64_t nd = x.dim(), R = x.size(-2), C = x.size(-1);
  const int64_t rows = x.numel() / std::max<int64_t>(C, 1);
  if (x.numel() == 0) return;
  const int64_t xr = x.stride(-2), xc = x.stride(-1);
  visit_dtype(x.dtype(), [&]<class T>() {
    const T zero = convert<T>(0);
    const T* xb = static_cast<const T*>(x.data_ptr());
    T* ob = static_cast<T*>(a.out.data_ptr());
    detail::parallel_for(
        0, rows, std::max<int64_t>(1, detail::kGrainSize / C), [&](int64_t rb, int64_t re) {
          for (int64_t r = rb; r < re; ++r) {
            // Offset of the matrix holding row r, from its batch index over x's batch dims.
            int64_t b = r / R, off = 0;
            for (int64_t d = nd - 3; d >= 0; --d) {
              off += (b % x.sizes()[size_t(d)]) * x.strides()[size_t(d)];
              b /= x.sizes()[size_t(d)];
            }
            const int64_t i = r % R;
            const T* xi = xb + off + i * xr;
            T* o = ob + r * C;
            // Columns kept: j <= i + diagonal (tril) or j >= i + diagonal (triu).
            const int64_t edge = std::clamp<int64_t>(i + a.diagonal + (a.lower ? 1 : 0), 0, C);
            const int64_t keep_lo = a.lower ? 0 : edge, keep_hi = a.lower ? edge : C;
            for (int64_t j = 0; j < keep_lo; ++j) o[j] = zero;
            if (xc == 1)
              std::copy(xi + keep_lo, xi + keep_hi, o + keep_lo);
            else
              for (int64_t j = keep_lo; j < keep_hi; ++j) o[j] = xi[j * xc];
            for (int64_t j = keep_hi; j < C; ++j) o[j] = zero;
          }
        });
  });
}

}  // namespace

void register_index_cpu() {
  detail::index_scan_kernel.set(DeviceType::CPU, &index_scan);
  detail::gather_kernel.set(DeviceType::CPU, &gather);
  detail::scatter_kernel.set(DeviceType::CPU, &scatter);
  detail::masked_select_kernel.set(DeviceType::CPU, &masked_select);
  detail::trilu_kernel.set(DeviceType::CPU, &trilu);
}

}  // namespace ignis::cpu
