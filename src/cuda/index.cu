// CUDA kernels of the indexing family, the twins of src/cpu/index.cpp: the index scan (the
// bounds check the front ends run before anything is written), gather (and index_select,
// embedding through it), scatter / scatter_add (and index_add, one_hot, embedding's backward
// through it), masked_select and tril/triu.
//
// Index scan: one kernel folds every value into an unsigned maximum (a negative value becomes
// a huge one) in device memory; the host reads that one word back. Only when it is out of
// range is the index copied to the host, where the CPU scan names the first bad value, so the
// error says the same as on the CPU and no kernel ever reads out of bounds.
//
// Scatter: a thread per outer position (the operands seen with size 1 along dim) walks the
// index along dim in order, as the CPU does. Distinct outer positions write distinct
// destinations, so there are no atomics, the last write wins and sums are added in the CPU's
// order: results equal the CPU's bit for bit. The price: a scatter whose outer extent is
// small (a 1-D scatter_add) has little parallelism.
#include <cub/cub.cuh>

#include "core/graph_capture.h"
#include "core/tensor_impl.h"
#include "cuda/launch.cuh"
#include "kernels/convert.h"
#include "kernels/scatter_ops.h"
#include "ops/index_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::make_plan;
using ignis::detail::make_tensor;
using ignis::detail::make_view;
using ignis::detail::visit_index;
using kernels::convert;
using kernels::opmath_t;

/// Calls f<I>() with I = int32_t when the plan's offsets fit in 32 bits, else int64_t.
template <class F>
void visit_offset_type(const ElementwisePlan& p, F&& f) {
  if (p.fits_int32)
    f.template operator()<int32_t>();
  else
    f.template operator()<int64_t>();
}

Tensor outer_view(const Tensor& t, Shape shape, int64_t dim) {
  shape[size_t(dim)] = 1;
  return make_view(t, std::move(shape), t.strides(), t.storage_offset());
}

/// A scratch buffer of `bytes` on device d from the caching allocator (freed with the tensor).
Tensor scratch(int64_t bytes, Device d) {
  return make_tensor({std::max<int64_t>(bytes, 1)}, kUInt8, d);
}

// ---- index scan --------------------------------------------------------------------------
template <class I, class O>
__global__ void index_umax_kernel(
    int64_t n, Offsets<O, 1> offs, const I* x, unsigned long long* result) {
  unsigned long long m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    O off[1];
    offs.at(O(i), off);
    m = max(m, (unsigned long long)(int64_t(x[off[0]])));
  }
#pragma unroll
  for (int d = 16; d > 0; d /= 2) m = max(m, __shfl_xor_sync(0xffffffffu, m, d));
  if (threadIdx.x % 32 == 0) atomicMax(result, m);
}

ignis::detail::IndexScan index_scan(const Tensor& index, int64_t hi) {
  ignis::detail::IndexScan r;
  if (index.numel() == 0) return r;
  ignis::detail::refuse_during_capture(
      "index_scan", "checks its indices with a read-back to the host");
  const ElementwisePlan p = make_plan({&index}, "index_scan");
  LaunchOn on(index.device());
  Tensor word = scratch(sizeof(unsigned long long), index.device());
  auto* d_max = static_cast<unsigned long long*>(word.data_ptr());
  IGNIS_CUDA_CHECK(cudaMemsetAsync(d_max, 0, sizeof(unsigned long long), on.stream), "index_scan");
  visit_index(index.dtype(), [&]<class I>() {
    visit_offset_type(p, [&]<class O>() {
      index_umax_kernel<I, O><<<grid_for(p.numel, 4), kThreads, 0, on.stream>>>(
          p.numel, make_offsets<O, 1>(p), reinterpret_cast<const I*>(p.data[0]), d_max);
    });
  });
  IGNIS_CUDA_CHECK_LAUNCH("index_scan");
  unsigned long long umax = 0;
  IGNIS_CUDA_CHECK(
      cudaMemcpyAsync(&umax, d_max, sizeof(umax), cudaMemcpyDeviceToHost, on.stream), "index_scan");
  IGNIS_CUDA_CHECK(cudaStreamSynchronize(on.stream), "index_scan");
  if (umax < (unsigned long long)(hi)) {
    r.max = int64_t(umax);
    return r;
  }
  // Error path only: the CPU scan finds the first offending value in row-major order.
  const Tensor host = index.cpu();
  return ignis::detail::index_scan_kernel.get(host.device())(host, hi);
}

// ---- gather ------------------------------------------------------------------------------
template <class T, class I, class O>
__global__ void gather_kernel(
    int64_t n, Offsets<O, 3> offs, T* out, const T* xb, const I* ix, int64_t xsd) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    O off[3];
    offs.at(O(i), off);
    out[off[0]] = xb[int64_t(off[1]) + int64_t(ix[off[2]]) * xsd];
  }
}

void gather(const ignis::detail::GatherArgs& a) {
  if (a.out.numel() == 0) return;
  // x restrided to index's shape with stride 0 along dim: the base of each gathered line.
  Shape xst = a.x.strides();
  xst[size_t(a.dim)] = 0;
  Tensor xr = make_view(a.x, a.index.sizes(), xst, a.x.storage_offset());
  const ElementwisePlan p = make_plan({&a.out, &xr, &a.index}, "gather");
  LaunchOn on(a.out.device());
  visit_dtype(a.x.dtype(), [&]<class T>() {
    visit_index(a.index.dtype(), [&]<class I>() {
      visit_offset_type(p, [&]<class O>() {
        gather_kernel<T, I, O><<<grid_for(p.numel), kThreads, 0, on.stream>>>(
            p.numel,
            make_offsets<O, 3>(p),
            reinterpret_cast<T*>(p.data[0]),
            reinterpret_cast<const T*>(p.data[1]),
            reinterpret_cast<const I*>(p.data[2]),
            a.x.stride(a.dim));
      });
    });
  });
  IGNIS_CUDA_CHECK_LAUNCH("gather");
}

// ---- scatter -----------------------------------------------------------------------------
using kernels::ScatterAdd;
using kernels::ScatterAssign;

/// Operands [self, index, src?] over the outer positions; D entries along dim each.
template <bool HasSrc, class T, class I, class O, class Op>
__global__ void scatter_kernel(
    int64_t n,
    Offsets<O, HasSrc ? 3 : 2> offs,
    T* self,
    const I* ix,
    const T* src,
    T value,
    int64_t D,
    int64_t ssd,
    int64_t isd,
    int64_t srcsd,
    Op op) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    O off[HasSrc ? 3 : 2];
    offs.at(O(i), off);
    T* sb = self + off[0];
    const I* ib = ix + off[1];
    for (int64_t j = 0; j < D; ++j) {
      T v;
      if constexpr (HasSrc)
        v = src[int64_t(off[2]) + j * srcsd];
      else
        v = value;
      op(sb[int64_t(ib[j * isd]) * ssd], v);
    }
  }
}

template <class T>
T scalar_as(const Scalar& s) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(float(s.to_double()));
  else
    return s.to<T>();
}

void scatter(const ignis::detail::ScatterArgs& a) {
  if (a.index.numel() == 0) return;
  const bool has_src = a.src.defined();
  const int64_t dim = a.dim, D = a.index.size(dim);
  Tensor self_v = outer_view(a.self, a.index.sizes(), dim);
  Tensor index_v = outer_view(a.index, a.index.sizes(), dim);
  Tensor src_v = has_src ? outer_view(a.src, a.index.sizes(), dim) : Tensor();
  const ElementwisePlan p = has_src ? make_plan({&self_v, &index_v, &src_v}, "scatter")
                                    : make_plan({&self_v, &index_v}, "scatter");
  const int64_t ssd = a.self.stride(dim), isd = a.index.stride(dim);
  const int64_t srcsd = has_src ? a.src.stride(dim) : 0;
  LaunchOn on(a.self.device());
  visit_dtype(a.self.dtype(), [&]<class T>() {
    const T value = has_src ? T{} : scalar_as<T>(a.value);
    visit_index(a.index.dtype(), [&]<class I>() {
      visit_offset_type(p, [&]<class O>() {
        auto run = [&](auto op) {
          T* self = reinterpret_cast<T*>(p.data[0]);
          const I* ix = reinterpret_cast<const I*>(p.data[1]);
          if (has_src)
            scatter_kernel<true, T, I, O><<<grid_for(p.numel), kThreads, 0, on.stream>>>(
                p.numel,
                make_offsets<O, 3>(p),
                self,
                ix,
                reinterpret_cast<const T*>(p.data[2]),
                value,
                D,
                ssd,
                isd,
                srcsd,
                op);
          else
            scatter_kernel<false, T, I, O><<<grid_for(p.numel), kThreads, 0, on.stream>>>(
                p.numel, make_offsets<O, 2>(p), self, ix, nullptr, value, D, ssd, isd, srcsd, op);
        };
        const auto alpha = a.alpha.to<opmath_t<T>>();
        if (a.reduce == ignis::detail::ScatterReduce::Assign)
          run(ScatterAssign<T>{});
        else if (alpha == opmath_t<T>(1))
          run(ScatterAdd<T, false>{alpha});
        else
          run(ScatterAdd<T, true>{alpha});
      });
    });
  });
  IGNIS_CUDA_CHECK_LAUNCH("scatter");
}

// ---- masked_select -----------------------------------------------------------------------
// Flags (0/1 per element, row-major), their exclusive prefix sum (CUB) gives each selected
// element its output slot; the total is read back to size the output.
template <class O>
__global__ void mask_flags_kernel(int64_t n, Offsets<O, 2> offs, const bool* mask, int64_t* flags) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    O off[2];
    offs.at(O(i), off);
    flags[i] = mask[off[0]] ? 1 : 0;
  }
}

template <class T, class O>
__global__ void masked_copy_kernel(
    int64_t n, Offsets<O, 2> offs, const bool* mask, const T* x, const int64_t* slot, T* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    O off[2];
    offs.at(O(i), off);
    if (mask[off[0]]) out[slot[i]] = x[off[1]];
  }
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  ignis::detail::refuse_during_capture(
      "masked_select", "reads its result's size back to the host");
  const ElementwisePlan p = make_plan({&mask, &x}, "masked_select");
  const int64_t n = p.numel;
  if (n == 0) return make_tensor({0}, x.dtype(), x.device());
  LaunchOn on(x.device());
  Tensor flags = make_tensor({n}, kInt64, x.device()), slots = make_tensor({n}, kInt64, x.device());
  auto* f = static_cast<int64_t*>(flags.data_ptr());
  auto* s = static_cast<int64_t*>(slots.data_ptr());
  visit_offset_type(p, [&]<class O>() {
    mask_flags_kernel<O><<<grid_for(n), kThreads, 0, on.stream>>>(
        n, make_offsets<O, 2>(p), reinterpret_cast<const bool*>(p.data[0]), f);
  });
  IGNIS_CUDA_CHECK_LAUNCH("masked_select");
  size_t temp_bytes = 0;
  IGNIS_CUDA_CHECK(
      cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, f, s, n, on.stream), "masked_select");
  Tensor temp = scratch(int64_t(temp_bytes), x.device());
  IGNIS_CUDA_CHECK(
      cub::DeviceScan::ExclusiveSum(temp.data_ptr(), temp_bytes, f, s, n, on.stream),
      "masked_select");
  int64_t last[2] = {0, 0};  // the last slot and the last flag: their sum is the count
  IGNIS_CUDA_CHECK(
      cudaMemcpyAsync(&last[0], s + n - 1, sizeof(int64_t), cudaMemcpyDeviceToHost, on.stream),
      "masked_select");
  IGNIS_CUDA_CHECK(
      cudaMemcpyAsync(&last[1], f + n - 1, sizeof(int64_t), cudaMemcpyDeviceToHost, on.stream),
      "masked_select");
  IGNIS_CUDA_CHECK(cudaStreamSynchronize(on.stream), "masked_select");
  Tensor out = make_tensor({last[0] + last[1]}, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  visit_dtype(x.dtype(), [&]<class T>() {
    visit_offset_type(p, [&]<class O>() {
      masked_copy_kernel<T, O><<<grid_for(n), kThreads, 0, on.stream>>>(
          n,
          make_offsets<O, 2>(p),
          reinterpret_cast<const bool*>(p.data[0]),
          reinterpret_cast<const T*>(p.data[1]),
          s,
          static_cast<T*>(out.data_ptr()));
    });
  });
  IGNIS_CUDA_CHECK_LAUNCH("masked_select");
  return out;
}

// ---- tril / triu -------------------------------------------------------------------------
struct TriluLayout {
  int nbatch = 0;  // batch dims of x (all but the last two)
  int64_t sizes[ignis::detail::kMaxPlanDims] = {};
  int64_t strides[ignis::detail::kMaxPlanDims] = {};
  int64_t R = 0, C = 0, row_stride = 0, col_stride = 0, diagonal = 0;
  bool lower = true;
};

template <class T>
__global__ void trilu_kernel(int64_t n, TriluLayout L, const T* x, T* out) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % L.C, r = e / L.C, i = r % L.R;
    int64_t b = r / L.R, off = 0;
    for (int d = L.nbatch - 1; d >= 0; --d) {
      off += (b % L.sizes[d]) * L.strides[d];
      b /= L.sizes[d];
    }
    // Kept: j <= i + diagonal (tril) or j >= i + diagonal (triu).
    const bool keep = L.lower ? j <= i + L.diagonal : j >= i + L.diagonal;
    out[e] = keep ? x[off + i * L.row_stride + j * L.col_stride] : convert<T>(0);
  }
}

void trilu(const ignis::detail::TriluArgs& a) {
  const Tensor& x = a.x;
  const int64_t n = x.numel();
  if (n == 0) return;
  IGNIS_CHECK(
      x.dim() - 2 <= ignis::detail::kMaxPlanDims,
      NotImplementedError,
      "[tril] at most {} batch dimensions on cuda, got {}",
      ignis::detail::kMaxPlanDims,
      x.dim() - 2);
  TriluLayout L;
  L.nbatch = int(x.dim() - 2);
  for (int d = 0; d < L.nbatch; ++d) L.sizes[d] = x.size(d), L.strides[d] = x.stride(d);
  L.R = x.size(-2), L.C = x.size(-1), L.row_stride = x.stride(-2), L.col_stride = x.stride(-1);
  L.diagonal = a.diagonal, L.lower = a.lower;
  LaunchOn on(x.device());
  visit_dtype(x.dtype(), [&]<class T>() {
    trilu_kernel<T><<<grid_for(n), kThreads, 0, on.stream>>>(
        n, L, static_cast<const T*>(x.data_ptr()), static_cast<T*>(a.out.data_ptr()));
  });
  IGNIS_CUDA_CHECK_LAUNCH("tril");
}

}  // namespace

void register_index() {
  ignis::detail::index_scan_kernel.set(DeviceType::CUDA, &index_scan);
  ignis::detail::gather_kernel.set(DeviceType::CUDA, &gather);
  ignis::detail::scatter_kernel.set(DeviceType::CUDA, &scatter);
  ignis::detail::masked_select_kernel.set(DeviceType::CUDA, &masked_select);
  ignis::detail::trilu_kernel.set(DeviceType::CUDA, &trilu);
}

}  // namespace ignis::cuda::detail
