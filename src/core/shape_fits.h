// The limit on a tensor's shape, shared by the factories and the file readers (which must
// refuse a forged shape with their own IOError before asking for a tensor).
#pragma once

#include "ignis/tensor.h"

namespace ignis::detail {

/// Whether a tensor of this shape can be laid out: the product of its sizes, zeros counted as
/// ones (that product is the outermost contiguous stride), times 8 bytes fits in int64. A
/// zero size makes the tensor empty but does not make [0, 2^40, 2^40] representable.
bool shape_fits(const Shape& shape);

}  // namespace ignis::detail
