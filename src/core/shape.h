// Shape arithmetic shared by every op: element counts, contiguous strides, dimension
// wrapping, broadcasting, and printing shapes in error messages.
#pragma once

#include <string>

#include "ignis/tensor.h"

namespace ignis::detail {

int64_t shape_numel(const Shape& shape);
/// Row-major strides (in elements) of a contiguous tensor of this shape.
Shape contiguous_strides(const Shape& shape);
/// Maps d in [-ndim, ndim) to [0, ndim); throws IndexError naming op otherwise.
/// A 0-dim tensor accepts dims -1 and 0, as PyTorch.
int64_t wrap_dim(int64_t d, int64_t ndim, const char* op);
/// Wraps and de-duplicates a list of dims into a bitmask (bit d set = dim d listed).
/// An empty list selects every dimension.
uint64_t dims_mask(const Shape& dims, int64_t ndim, const char* op);
/// "[64, 10]"
std::string shape_str(const Shape& shape);
/// The broadcast of two shapes; throws ShapeError naming op.
Shape broadcast_shape(const Shape& a, const Shape& b, const char* op);
/// True when a tensor with these sizes/strides is laid out row-major without gaps.
bool is_contiguous_layout(const Shape& sizes, const Shape& strides);
/// Throws ValueError unless every size is >= 0 and the shape fits (core/shape_fits.h).
void check_sizes(const Shape& shape, const char* op);

}  // namespace ignis::detail
