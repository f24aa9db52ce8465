// STUB: to be replaced by the random implementation.
#include "ignis/ops.h"

namespace ignis {

void manual_seed(uint64_t seed) {
  throw NotImplementedError("[manual_seed] not implemented yet");
}
Generator& default_generator() {
  throw NotImplementedError("[default_generator] not implemented yet");
}
Tensor rand(const Shape& shape, TensorOptions opts, Generator* gen) {
  throw NotImplementedError("[rand] not implemented yet");
}
Tensor randn(const Shape& shape, TensorOptions opts, Generator* gen) {
  throw NotImplementedError("[randn] not implemented yet");
}
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts,
               Generator* gen) {
  throw NotImplementedError("[randint] not implemented yet");
}
Tensor bernoulli(const Tensor& p, Generator* gen) {
  throw NotImplementedError("[bernoulli] not implemented yet");
}
Tensor randperm(int64_t n, TensorOptions opts, Generator* gen) {
  throw NotImplementedError("[randperm] not implemented yet");
}

}  // namespace ignis
namespace ignis {
Tensor& Tensor::uniform_(double, double, Generator*) { throw NotImplementedError("[uniform_] not implemented yet"); }
Tensor& Tensor::normal_(double, double, Generator*) { throw NotImplementedError("[normal_] not implemented yet"); }
Tensor& Tensor::bernoulli_(double, Generator*) { throw NotImplementedError("[bernoulli_] not implemented yet"); }
}  // namespace ignis
