// STUB: the backward engine arrives next.
#include "core/error.h"
#include "ignis/autograd.h"

namespace ignis {
void Tensor::backward(const Tensor&, bool, bool) const {
  throw NotImplementedError("[backward] not implemented yet");
}
namespace autograd {
std::vector<Tensor> grad(const std::vector<Tensor>&, const std::vector<Tensor>&,
                         const std::vector<Tensor>&, bool, bool, bool) {
  throw NotImplementedError("[autograd::grad] not implemented yet");
}
std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>&,
                      const std::vector<Tensor>&, GradcheckOptions) {
  throw NotImplementedError("[gradcheck] not implemented yet");
}
}  // namespace autograd
}  // namespace ignis
