// STUB: to be replaced by the indexing and joining implementation.
#include "ignis/ops.h"

namespace ignis {

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  throw NotImplementedError("[index_select] not implemented yet");
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  throw NotImplementedError("[gather] not implemented yet");
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  throw NotImplementedError("[scatter] not implemented yet");
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  throw NotImplementedError("[scatter] not implemented yet");
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  throw NotImplementedError("[scatter_add] not implemented yet");
}
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 const Scalar& alpha) {
  throw NotImplementedError("[index_add] not implemented yet");
}
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  throw NotImplementedError("[scatter_] not implemented yet");
}
Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  throw NotImplementedError("[scatter_add_] not implemented yet");
}
Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                   const Scalar& alpha) {
  throw NotImplementedError("[index_add_] not implemented yet");
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  throw NotImplementedError("[masked_fill] not implemented yet");
}
Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Scalar& value) {
  throw NotImplementedError("[masked_fill_] not implemented yet");
}
Tensor masked_select(const Tensor& x, const Tensor& mask) {
  throw NotImplementedError("[masked_select] not implemented yet");
}
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  throw NotImplementedError("[cat] not implemented yet");
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  throw NotImplementedError("[stack] not implemented yet");
}
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  throw NotImplementedError("[split] not implemented yet");
}
std::vector<Tensor> split(const Tensor& x, const Shape& sizes, int64_t dim) {
  throw NotImplementedError("[split] not implemented yet");
}
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  throw NotImplementedError("[chunk] not implemented yet");
}
Tensor one_hot(const Tensor& x, int64_t num_classes) {
  throw NotImplementedError("[one_hot] not implemented yet");
}
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim,
                                bool largest, bool sorted) {
  throw NotImplementedError("[topk] not implemented yet");
}
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending,
                                bool stable) {
  throw NotImplementedError("[sort] not implemented yet");
}
Tensor argsort(const Tensor& x, int64_t dim, bool descending,
               bool stable) {
  throw NotImplementedError("[argsort] not implemented yet");
}
Tensor tril(const Tensor& x, int64_t diagonal) {
  throw NotImplementedError("[tril] not implemented yet");
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  throw NotImplementedError("[triu] not implemented yet");
}

}  // namespace ignis
