// STUB: to be replaced by the reductions implementation.
#include "ignis/ops.h"

namespace ignis {

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim,
           std::optional<DType> dtype) {
  throw NotImplementedError("[sum] not implemented yet");
}
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[mean] not implemented yet");
}
Tensor prod(const Tensor& x, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[prod] not implemented yet");
}
Tensor max(const Tensor& x) {
  throw NotImplementedError("[max] not implemented yet");
}
Tensor min(const Tensor& x) {
  throw NotImplementedError("[min] not implemented yet");
}
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  throw NotImplementedError("[max] not implemented yet");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  throw NotImplementedError("[min] not implemented yet");
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  throw NotImplementedError("[argmax] not implemented yet");
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  throw NotImplementedError("[argmin] not implemented yet");
}
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[amax] not implemented yet");
}
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[amin] not implemented yet");
}
Tensor var(const Tensor& x, const Shape& dims, double correction, bool keepdim) {
  throw NotImplementedError("[var] not implemented yet");
}
Tensor std(const Tensor& x, const Shape& dims, double correction, bool keepdim) {
  throw NotImplementedError("[std] not implemented yet");
}
Tensor norm(const Tensor& x, double p, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[norm] not implemented yet");
}
Tensor all(const Tensor& x, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[all] not implemented yet");
}
Tensor any(const Tensor& x, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[any] not implemented yet");
}
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim) {
  throw NotImplementedError("[logsumexp] not implemented yet");
}
Tensor cumsum(const Tensor& x, int64_t dim) {
  throw NotImplementedError("[cumsum] not implemented yet");
}
Tensor softmax(const Tensor& x, int64_t dim) {
  throw NotImplementedError("[softmax] not implemented yet");
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  throw NotImplementedError("[log_softmax] not implemented yet");
}

}  // namespace ignis
