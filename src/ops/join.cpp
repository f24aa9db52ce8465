// Joining and splitting: cat and stack (copies into a new tensor) and split / chunk (views).
// cat writes each input into a narrow() view of the output with copy_, which converts dtypes
// and handles any input layout; so it needs no kernel of its own.
#include <algorithm>

#include "autograd/record.h"
#include "core/error.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"

namespace ignis {

using namespace detail;

namespace {
/// PyTorch still accepts (and skips) 1-D empty tensors of shape [0] next to tensors of any
/// shape in cat, a legacy of the time when every empty tensor had that shape.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }
}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  IGNIS_CHECK(!tensors.empty(), ValueError, "[cat] expected a non-empty list of tensors");
  const Device device = tensors[0].defined() ? tensors[0].device() : Device::cpu();
  DType dtype = kBool;
  int64_t ref = -1;  // first input that is not skipped: the shape the others must match
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    IGNIS_CHECK(t.defined(), ValueError, "[cat] tensor {} in the list is undefined", i);
    IGNIS_CHECK(t.device() == device, DeviceError,
                "[cat] expected all tensors on {}, but tensor {} is on {}", device.str(), i,
                t.device().str());
    IGNIS_CHECK(t.dim() > 0, ShapeError,
                "[cat] zero-dimensional tensor (at position {}) cannot be concatenated", i);
    dtype = i == 0 ? t.dtype() : promote_types(dtype, t.dtype());
    if (ref < 0 && !is_legacy_empty(t)) ref = int64_t(i);
  }
  if (ref < 0) return make_tensor({0}, dtype, device);
  const Tensor& r = tensors[size_t(ref)];
  const int64_t d = wrap_dim(dim, r.dim(), "cat");
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (is_legacy_empty(t)) continue;
    IGNIS_CHECK(t.dim() == r.dim(), ShapeError,
                "[cat] tensors must have the same number of dimensions: tensor {} has shape {} "
                "but tensor {} has shape {}",
                ref, shape_str(r.sizes()), i, shape_str(t.sizes()));
    for (int64_t k = 0; k < r.dim(); ++k)
      IGNIS_CHECK(k == d || t.size(k) == r.size(k), ShapeError,
                  "[cat] sizes of tensors must match except in dimension {}: tensor {} has shape "
                  "{} but tensor {} has shape {}",
                  d, ref, shape_str(r.sizes()), i, shape_str(t.sizes()));
    total += t.size(d);
  }
  Shape shape = r.sizes();
  shape[size_t(d)] = total;
  Tensor out = make_tensor(shape, dtype, device);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    // An empty result still gets its node below: an empty batch still backpropagates.
    if (out.numel() == 0 || is_legacy_empty(t) || t.size(d) == 0) continue;
    out.narrow(d, offset, t.size(d)).copy_(t);
    offset += t.size(d);
  }
  if (needs_grad(tensors)) {
    // Each input's gradient is its slice of g; skipped legacy-empty inputs get none.
    std::vector<int64_t> lengths;
    for (const Tensor& t : tensors) lengths.push_back(is_legacy_empty(t) ? -1 : t.size(d));
    record("cat", {out}, tensors, {}, [lengths, d](const auto& g, const auto&) {
      std::vector<Tensor> grads;
      int64_t at = 0;
      for (int64_t len : lengths) {
        grads.push_back(len < 0 ? Tensor() : g[0].narrow(d, at, len));
        at += std::max<int64_t>(len, 0);
      }
      return grads;
    });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  IGNIS_CHECK(!tensors.empty(), ValueError, "[stack] expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i)
    IGNIS_CHECK(tensors[i].defined(), ValueError, "[stack] tensor {} in the list is undefined", i);
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    IGNIS_CHECK(tensors[i].sizes() == tensors[0].sizes(), ShapeError,
                "[stack] expects tensors of equal shape, but tensor 0 has shape {} and tensor {} "
                "has shape {}",
                shape_str(tensors[0].sizes()), i, shape_str(tensors[i].sizes()));
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return cat(parts, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  IGNIS_CHECK(x.defined(), ValueError, "[split] undefined tensor");
  IGNIS_CHECK(x.dim() > 0, ShapeError, "[split] expects a tensor of at least 1 dimension");
  IGNIS_CHECK(split_size >= 0, ValueError, "[split] split_size must be non-negative, got {}",
              split_size);
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  const int64_t n = x.size(d);
  IGNIS_CHECK(split_size > 0 || n == 0, ValueError,
              "[split] split_size can be 0 only when dimension {} has size 0, but it has size {}",
              d, n);
  const int64_t pieces =
      split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<Tensor> out;
  out.reserve(size_t(pieces));
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t start = i * split_size;
    out.push_back(x.narrow(d, start, std::min(split_size, n - start)));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, const Shape& sizes, int64_t dim) {
  IGNIS_CHECK(x.defined(), ValueError, "[split] undefined tensor");
  IGNIS_CHECK(x.dim() > 0, ShapeError, "[split] expects a tensor of at least 1 dimension");
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t sum = 0;
  for (int64_t s : sizes) {
    IGNIS_CHECK(s >= 0, ValueError, "[split] split sizes must be non-negative, got {}",
                shape_str(sizes));
    sum += s;
  }
  IGNIS_CHECK(sum == x.size(d), ValueError,
              "[split] split sizes {} must sum to {} (the size of dimension {}), got {}",
              shape_str(sizes), x.size(d), d, sum);
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  IGNIS_CHECK(x.defined(), ValueError, "[chunk] undefined tensor");
  IGNIS_CHECK(x.dim() > 0, ShapeError, "[chunk] expects a tensor of at least 1 dimension");
  IGNIS_CHECK(chunks > 0, ValueError, "[chunk] chunks must be positive, got {}", chunks);
  const int64_t d = wrap_dim(dim, x.dim(), "chunk");
  const int64_t n = x.size(d);
  // PyTorch's rule: pieces of ceil(n / chunks), so fewer than `chunks` pieces may come back;
  // an empty dimension gives `chunks` empty pieces.
  if (n == 0) return split(x, Shape(size_t(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

}  // namespace ignis
