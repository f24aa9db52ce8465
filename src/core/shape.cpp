// Shape arithmetic: see shape.h.
#include "core/shape.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/error.h"
#include "core/shape_fits.h"

namespace ignis::detail {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

int64_t wrap_dim(int64_t d, int64_t ndim, const char* op) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  IGNIS_CHECK(d >= -n && d < n, IndexError,
              "[{}] dimension {} is out of range for a tensor of {} dimension(s) (expected "
              "[{}, {}])",
              op, d, ndim, -n, n - 1);
  return d < 0 ? d + n : d;
}

uint64_t dims_mask(const Shape& dims, int64_t ndim, const char* op) {
  IGNIS_CHECK(ndim <= 64, ShapeError, "[{}] tensors of more than 64 dimensions are not supported",
              op);
  if (dims.empty()) return ndim == 64 ? ~0ull : ((1ull << ndim) - 1);
  uint64_t mask = 0;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    IGNIS_CHECK(!(mask >> w & 1), IndexError, "[{}] dimension {} appears more than once in {}",
                op, w, shape_str(dims));
    mask |= 1ull << w;
  }
  if (ndim == 0) mask = 0;
  return mask;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Shape broadcast_shape(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    IGNIS_CHECK(da == db || da == 1 || db == 1, ShapeError,
                "[{}] shapes {} and {} cannot be broadcast together (dimension {}: {} vs {})", op,
                shape_str(a), shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool is_contiguous_layout(const Shape& sizes, const Shape& strides) {
  // An empty tensor is contiguous whatever its strides (PyTorch's rule; channels-last strides
  // of a shape with a size-0 dim are zeros).
  for (int64_t s : sizes)
    if (s == 0) return true;
  int64_t expected = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool shape_fits(const Shape& shape) {
  int64_t span = 8;  // the widest element, in bytes
  for (int64_t s : shape)
    if (s < 0 || __builtin_mul_overflow(span, std::max<int64_t>(s, 1), &span)) return false;
  return true;
}

void check_sizes(const Shape& shape, const char* op) {
  for (int64_t s : shape)
    IGNIS_CHECK(s >= 0, ValueError, "[{}] negative size in shape {}", op, shape_str(shape));
  IGNIS_CHECK(shape_fits(shape), ValueError,
              "[{}] shape {} has too many elements: the product of its sizes overflows int64",
              op, shape_str(shape));
}

}  // namespace ignis::detail

namespace ignis {
Shape broadcast_shapes(const Shape& a, const Shape& b) {
  return detail::broadcast_shape(a, b, "broadcast_shapes");
}

size_t Shape::checked(size_t i) const {
  if (i >= size_) throw std::out_of_range("Shape::at: index past the end");
  return i;
}
}  // namespace ignis
