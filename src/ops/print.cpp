// STUB: to be replaced by PyTorch-style printing.
#include "ignis/ops.h"
namespace ignis {
std::string Tensor::str() const { return "tensor(...)"; }
}  // namespace ignis
