// STUB: to be replaced by the linear algebra implementation.
#include "ignis/ops.h"

namespace ignis {

Tensor matmul(const Tensor& a, const Tensor& b) {
  throw NotImplementedError("[matmul] not implemented yet");
}
Tensor mm(const Tensor& a, const Tensor& b) {
  throw NotImplementedError("[mm] not implemented yet");
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  throw NotImplementedError("[bmm] not implemented yet");
}
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha) {
  throw NotImplementedError("[addmm] not implemented yet");
}
Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha) {
  throw NotImplementedError("[baddbmm] not implemented yet");
}
Tensor outer(const Tensor& a, const Tensor& b) {
  throw NotImplementedError("[outer] not implemented yet");
}
Tensor dot(const Tensor& a, const Tensor& b) {
  throw NotImplementedError("[dot] not implemented yet");
}

}  // namespace ignis
