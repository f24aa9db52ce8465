// Front ends of sort, argsort and topk: dim and k checks, output allocation, one kernel call
// (src/cpu/sort.cpp on the CPU). A 0-dim tensor sorts as one element.
#include "autograd/record.h"
#include "core/error.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/index_kernels.h"

namespace ignis {

using namespace detail;

namespace {
/// Values picked along d by `indices` (sort, topk): each gets its gradient back at the index
/// it came from, in zeros elsewhere.
void record_picked(const char* op, const Tensor& x, int64_t d, const Tensor& values,
                   const Tensor& indices) {
  record(op, {values, indices}, {x}, {save(indices)}, [xs = x.sizes(), d](const auto& g, const auto& s) {
    const Shape x1 = xs.empty() ? Shape{1} : xs;
    Tensor idx = s[0].reshape(s[0].dim() == 0 ? Shape{1} : s[0].sizes());
    Tensor z = zeros(x1, TensorOptions(g[0].dtype(), g[0].device()));
    return std::vector<Tensor>{scatter(z, d, idx, g[0].reshape(idx.sizes())).reshape(xs)};
  });
}

std::tuple<Tensor, Tensor> sort_impl(const Tensor& x, int64_t dim, bool descending,
                                     bool with_values, const char* op) {
  IGNIS_CHECK(x.defined(), ValueError, "[{}] undefined tensor", op);
  Tensor x1 = x.dim() == 0 ? x.unsqueeze(0) : x;
  const int64_t d = wrap_dim(dim, x1.dim(), op);
  Tensor values = with_values ? make_tensor(x1.sizes(), x.dtype(), x.device()) : Tensor();
  Tensor indices = make_tensor(x1.sizes(), kInt64, x.device());
  if (x1.numel() > 0) sort_kernel.get(x.device())(SortArgs{values, indices, x1, d, descending});
  if (x.dim() == 0) {
    indices = indices.squeeze(0);
    if (with_values) values = values.squeeze(0);
  }
  if (with_values && needs_grad({&x})) record_picked(op, x, d, values, indices);
  return {values, indices};
}
}  // namespace

// `stable` needs no separate path: the kernel always keeps equal elements in order.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return sort_impl(x, dim, descending, true, "sort");
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return std::get<1>(sort_impl(x, dim, descending, false, "argsort"));
}

// `sorted` = false may return any order (PyTorch); this one always returns sorted results.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  IGNIS_CHECK(x.defined(), ValueError, "[topk] undefined tensor");
  Tensor x1 = x.dim() == 0 ? x.unsqueeze(0) : x;
  const int64_t d = wrap_dim(dim, x1.dim(), "topk");
  const int64_t n = x1.size(d);
  IGNIS_CHECK(k >= 0 && k <= n, ValueError,
              "[topk] k = {} is out of range for dimension {} of size {} (shape {})", k, d, n,
              shape_str(x.sizes()));
  if (x.dim() == 0) k = 1;  // PyTorch returns the element itself for k = 0 or 1
  Shape shape = x1.sizes();
  shape[size_t(d)] = k;
  Tensor values = make_tensor(shape, x.dtype(), x.device());
  Tensor indices = make_tensor(shape, kInt64, x.device());
  if (values.numel() > 0) topk_kernel.get(x.device())(TopkArgs{values, indices, x1, k, d, largest});
  if (x.dim() == 0) values = values.squeeze(0), indices = indices.squeeze(0);
  if (needs_grad({&x})) record_picked("topk", x, d, values, indices);
  return {values, indices};
}

}  // namespace ignis
