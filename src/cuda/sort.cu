// CUDA sort / argsort / topk and cumsum, the twins of src/cpu/sort.cpp and the cumsum of
// src/cpu/softmax.cpp.
//
// Sort: the rows along dim are made contiguous ([rows, n]); each value becomes an unsigned
// key whose order is the CPU's order (NaN the largest, -0 equal to +0; all bits inverted for
// descending, which puts NaN first as the CPU does), and CUB's segmented stable sort orders
// (key, position) pairs row by row. Stability gives the CPU's tie-break (equal values by
// increasing index) in both directions, so indices match the CPU exactly. topk sorts whole
// rows and keeps the first k.
//
// cumsum: a thread per (outer, column) walks the dim in order, accumulating in double for
// floats and wrapping int64 for integers, as the CPU: the results are the CPU's bit for bit.
// A long dim with few columns (a 1-D cumsum) therefore has little parallelism.
#include <cub/cub.cuh>
#include <limits>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "cuda/launch.cuh"
#include "ignis/autograd.h"
#include "kernels/convert.h"
#include "ops/index_kernels.h"
#include "ops/reduce_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::make_tensor;
using kernels::convert;
using kernels::opmath_t;

/// The unsigned key type of T: 64 bits for the 8-byte types, 32 bits otherwise.
template <class T>
using key_t = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned int>;

/// An unsigned key ordered as the CPU orders T (NaN largest, -0 == +0).
template <class T>
__device__ __forceinline__ key_t<T> order_key(T v) {
  if constexpr (std::is_same_v<T, double>) {
    if (v != v) return ~0ull;
    const unsigned long long b = v == 0.0 ? 0ull : (unsigned long long)__double_as_longlong(v);
    return (b >> 63) ? ~b : b | (1ull << 63);
  } else if constexpr (kernels::is_floating_v<T>) {
    const float f = float(v);  // exact for half and bfloat16
    if (f != f) return ~0u;
    const unsigned int b = f == 0.0f ? 0u : __float_as_uint(f);
    return (b >> 31) ? ~b : b | (1u << 31);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return (unsigned long long)(v) ^ (1ull << 63);
  } else if constexpr (std::is_signed_v<T>) {
    return (unsigned int)(int(v)) ^ (1u << 31);
  } else {
    return (unsigned int)(v);  // uint8, bool
  }
}

template <class T>
__global__ void make_keys_kernel(
    int64_t total, int64_t n, const T* x, bool descending, key_t<T>* keys, int* positions) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const key_t<T> k = order_key(x[i]);
    keys[i] = descending ? key_t<T>(~k) : k;
    positions[i] = int(i % n);
  }
}

__global__ void row_offsets_kernel(int64_t rows, int64_t n, int64_t* offsets) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r <= rows;
       r += int64_t(gridDim.x) * blockDim.x)
    offsets[r] = r * n;
}

/// The first `want` entries of each sorted row: out_idx[r, j] = position, out_val the value.
template <class T>
__global__ void pick_kernel(
    int64_t total,
    int64_t n,
    int64_t want,
    const T* x,
    const int* sorted_pos,
    int64_t* out_idx,
    T* out_val) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / want, j = e % want;
    const int p = sorted_pos[r * n + j];
    out_idx[e] = p;
    if (out_val) out_val[e] = x[r * n + p];
  }
}

/// Sorts every row of x along dim and writes the first `want` of each into values (if
/// defined) and indices, both contiguous with x's shape but `want` along dim.
void sort_rows(
    const Tensor& values,
    const Tensor& indices,
    const Tensor& x,
    int64_t dim,
    bool descending,
    int64_t want) {
  const int64_t n = x.size(dim);
  if (x.numel() == 0 || want == 0) return;
  IGNIS_CHECK(
      n <= std::numeric_limits<int>::max(),
      NotImplementedError,
      "[sort] rows of at most 2^31 - 1 elements on cuda, got {}",
      n);
  // CUB's segmented sort counts items and segments in int.
  IGNIS_CHECK(
      x.numel() <= std::numeric_limits<int>::max(),
      NotImplementedError,
      "[sort] at most 2^31 - 1 elements in all on cuda, got {}; sort it in parts",
      x.numel());
  NoGradGuard no_grad;
  const Device dev = x.device();
  const Tensor rows_x = x.transpose(dim, -1).contiguous();  // [..., n], dim last
  const int64_t total = rows_x.numel(), rows = total / n, picked = rows * want;
  LaunchOn on(dev);
  Tensor out_idx = make_tensor({rows, want}, kInt64, dev);
  Tensor out_val = values.defined() ? make_tensor({rows, want}, x.dtype(), dev) : Tensor();
  visit_dtype(x.dtype(), [&]<class T>() {
    using K = key_t<T>;
    Tensor keys = make_tensor({2 * total * int64_t(sizeof(K))}, kUInt8, dev);
    Tensor pos = make_tensor({2 * total}, kInt32, dev);
    Tensor offsets = make_tensor({rows + 1}, kInt64, dev);
    K* k_in = static_cast<K*>(keys.data_ptr());
    K* k_out = k_in + total;
    int* p_in = static_cast<int*>(pos.data_ptr());
    int* p_out = p_in + total;
    auto* off = static_cast<int64_t*>(offsets.data_ptr());
    const T* xs = static_cast<const T*>(rows_x.data_ptr());
    make_keys_kernel<T>
        <<<grid_for(total), kThreads, 0, on.stream>>>(total, n, xs, descending, k_in, p_in);
    row_offsets_kernel<<<grid_for(rows + 1), kThreads, 0, on.stream>>>(rows, n, off);
    IGNIS_CUDA_CHECK_LAUNCH("sort");
    size_t temp_bytes = 0;
    IGNIS_CUDA_CHECK(
        cub::DeviceSegmentedSort::StableSortPairs(
            nullptr, temp_bytes, k_in, k_out, p_in, p_out, total, rows, off, off + 1, on.stream),
        "sort");
    Tensor temp = make_tensor({std::max<int64_t>(int64_t(temp_bytes), 1)}, kUInt8, dev);
    IGNIS_CUDA_CHECK(
        cub::DeviceSegmentedSort::StableSortPairs(
            temp.data_ptr(),
            temp_bytes,
            k_in,
            k_out,
            p_in,
            p_out,
            total,
            rows,
            off,
            off + 1,
            on.stream),
        "sort");
    pick_kernel<T><<<grid_for(picked), kThreads, 0, on.stream>>>(
        picked,
        n,
        want,
        xs,
        p_out,
        static_cast<int64_t*>(out_idx.data_ptr()),
        out_val.defined() ? static_cast<T*>(out_val.data_ptr()) : nullptr);
    IGNIS_CUDA_CHECK_LAUNCH("sort");
  });
  // Back to the callers' layout: their outputs seen with dim last match [rows, want].
  Shape rows_shape = indices.transpose(dim, -1).sizes();
  Tensor idx_view = indices.transpose(dim, -1);
  idx_view.copy_(out_idx.view(rows_shape));
  if (values.defined()) {
    Tensor val_view = values.transpose(dim, -1);
    val_view.copy_(out_val.view(rows_shape));
  }
}

void sort(const ignis::detail::SortArgs& a) {
  sort_rows(a.values, a.indices, a.x, a.dim, a.descending, a.x.size(a.dim));
}

void topk(const ignis::detail::TopkArgs& a) {
  sort_rows(a.values, a.indices, a.x, a.dim, a.largest, a.k);
}

// ---- cumsum ------------------------------------------------------------------------------
template <class T, class O>
__global__ void cumsum_kernel(int64_t columns, int64_t D, int64_t inner, const T* in, O* out) {
  using Acc = std::conditional_t<kernels::is_floating_v<T>, double, unsigned long long>;
  using Res = std::conditional_t<kernels::is_floating_v<T>, double, int64_t>;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < columns;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, j = c % inner;
    const T* x = in + o * D * inner + j;
    O* y = out + o * D * inner + j;
    Acc acc = 0;
    for (int64_t d = 0; d < D; ++d) {
      if constexpr (kernels::is_floating_v<T>)
        acc = __dadd_rn(acc, double(opmath_t<T>(x[d * inner])));  // no FMA contraction
      else
        acc += (unsigned long long)(int64_t(x[d * inner]));
      y[d * inner] = convert<O>(Res(acc));
    }
  }
}

void cumsum(const ignis::detail::CumsumArgs& a) {
  const int64_t columns = a.outer * a.inner;
  if (columns == 0 || a.dim == 0) return;
  LaunchOn on(a.device);
  visit_dtype(a.in_dtype, [&]<class T>() {
    using O = std::conditional_t<kernels::is_floating_v<T>, T, int64_t>;
    cumsum_kernel<T, O><<<grid_for(columns), kThreads, 0, on.stream>>>(
        columns, a.dim, a.inner, reinterpret_cast<const T*>(a.in), reinterpret_cast<O*>(a.out));
  });
  IGNIS_CUDA_CHECK_LAUNCH("cumsum");
}

}  // namespace

void register_sort() {
  ignis::detail::sort_kernel.set(DeviceType::CUDA, &sort);
  ignis::detail::topk_kernel.set(DeviceType::CUDA, &topk);
  ignis::detail::cumsum_kernel.set(DeviceType::CUDA, &cumsum);
}

}  // namespace ignis::cuda::detail
