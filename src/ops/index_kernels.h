// Kernel slots of the indexing family (gather/scatter, index scans, masked_select, tril/triu)
// and of sorting (sort, topk), with their argument structs. Front ends in src/ops/{index,
// join,sort}.cpp validate shapes, dtypes and index values first, so kernels may trust their
// arguments and never throw inside parallel regions. Backends fill the slots in
// register_index_cpu() / register_sort_cpu() (src/cpu/index.cpp, src/cpu/sort.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "core/dispatch.h"

namespace ignis::detail {

/// Calls f.template operator()<I>() with I the C++ type of an index tensor's dtype (int32 or
/// int64, the two the front ends accept), for the backends' index loops.
template <class F>
void visit_index(DType t, F&& f) {
  if (t == kInt32)
    f.template operator()<int32_t>();
  else
    f.template operator()<int64_t>();
}

/// What an index scan found: the largest value (0 when empty) if every value lies in
/// [0, hi), else the first value (row-major order) outside it.
struct IndexScan {
  int64_t max = 0;
  std::optional<int64_t> first_bad;
};
/// Scans an int64 or int32 index tensor of any layout against [0, hi).
inline KernelSlot<IndexScan (*)(const Tensor& index, int64_t hi)> index_scan_kernel{"index_scan"};

/// out[p] = x[p with p[dim] replaced by index[p]]. out (contiguous) and index (int64 or
/// int32, any strides, zero strides allowed) share one shape; index.size(d) <= x.size(d) for
/// d != dim; every index value lies in [0, x.size(dim)). out and x share the dtype.
/// index_select is this with a 1-D index expanded along the other dims.
struct GatherArgs {
  Tensor out;
  Tensor x;
  Tensor index;
  int64_t dim = 0;
};
inline KernelSlot<void (*)(const GatherArgs&)> gather_kernel{"gather"};

/// How scatter combines a source value with the destination element.
enum class ScatterReduce : uint8_t { Assign, Add };
/// self[p with p[dim] replaced by index[p]] (=|+=) alpha * src[p], for every p of index's
/// shape, in order of increasing p[dim] for each destination (the last write wins, sums are
/// deterministic). src is undefined when the scalar `value` is scattered instead. index
/// (int64 or int32, zero strides allowed) and src share one shape; index values lie in
/// [0, self.size(dim)); self is writable (no broadcast dims) and shares src's dtype.
/// index_add is this with a 1-D index expanded along the other dims; alpha is used by Add.
struct ScatterArgs {
  Tensor self;
  Tensor index;
  Tensor src;
  Scalar value;
  Scalar alpha = 1;
  int64_t dim = 0;
  ScatterReduce reduce = ScatterReduce::Assign;
};
inline KernelSlot<void (*)(const ScatterArgs&)> scatter_kernel{"scatter"};

/// The elements of x where mask (bool) is true, row-major, as a new contiguous 1-D tensor.
/// x and mask share one shape (broadcast views allowed).
inline KernelSlot<Tensor (*)(const Tensor& x, const Tensor& mask)> masked_select_kernel{
    "masked_select"};

/// out = tril(x, diagonal) when lower, else triu(x, diagonal), over the last two dims.
/// out is contiguous with x's shape and dtype (x has at least 2 dims, any strides).
struct TriluArgs {
  Tensor out;
  Tensor x;
  int64_t diagonal = 0;
  bool lower = true;
};
inline KernelSlot<void (*)(const TriluArgs&)> trilu_kernel{"tril"};

/// Sorts every row of x along dim: values (may be undefined, as for argsort) and int64
/// indices are contiguous with x's shape. NaN is the largest value; equal elements keep their
/// order (every sort is stable, which also satisfies stable = false).
struct SortArgs {
  Tensor values;
  Tensor indices;
  Tensor x;
  int64_t dim = 0;
  bool descending = false;
};
inline KernelSlot<void (*)(const SortArgs&)> sort_kernel{"sort"};

/// The k largest (or smallest) elements of every row of x along dim, sorted (NaN largest;
/// among equal values the lower index first). values/indices are contiguous with x's shape
/// except size k along dim; 0 <= k <= x.size(dim). Results are always sorted.
struct TopkArgs {
  Tensor values;
  Tensor indices;
  Tensor x;
  int64_t k = 0;
  int64_t dim = 0;
  bool largest = true;
};
inline KernelSlot<void (*)(const TopkArgs&)> topk_kernel{"topk"};

}  // namespace ignis::detail
