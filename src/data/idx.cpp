// IDX files (the MNIST family). Layout, all integers big-endian:
//   bytes 0-1  zero;  byte 2  element type (0x08 = uint8);  byte 3  number of dims d
//   d x uint32 sizes;  then prod(sizes) elements.
// The magic is thus 0x00000801 for labels and 0x00000803 for images; both are checked, and
// the data length must equal the product of the sizes exactly (a longer file is as suspect as
// a shorter one). The product is checked against what the file can hold before anything is
// allocated, and reading stops one byte past it (gzip bombs are cut short).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/shape_fits.h"
#include "data/file_bytes.h"
#include "ignis/data/readers.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace {

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

/// Reads and validates an IDX file of uint8 elements with `ndims` dims: its dims, and its
/// data (the product of the dims, in bytes) into `alloc(dims)`'s buffer. Every size is checked
/// before anything is allocated: the product must not overflow, and must fit in what the
/// file can hold (its size when plain, what deflate can reach from its size when gzip). The
/// data is read into the tensor directly and never past the promised size, so a gzip bomb
/// stops after one byte more than the header promised.
template <typename Alloc>
Tensor read_idx(const std::string& path, int ndims, const char* op, const char* what, Alloc alloc) {
  detail::ByteSource src(path, op);
  uint8_t head[4 + 4 * 3];
  const size_t got = src.read(head, 4);
  IGNIS_CHECK(
      got == 4,
      IOError,
      "[{}] {}: truncated: expected a 4-byte IDX header, found {} bytes",
      op,
      path,
      got);
  const uint32_t expected_magic = 0x0800u | uint32_t(ndims);
  const uint32_t magic = be32(head);
  IGNIS_CHECK(
      magic == expected_magic,
      IOError,
      "[{}] {}: wrong magic number: expected 0x{:08x} ({}), found 0x{:08x}",
      op,
      path,
      expected_magic,
      what,
      magic);
  const size_t header = 4 + 4 * size_t(ndims);
  const size_t got_dims = src.read(head + 4, header - 4);
  IGNIS_CHECK(
      got_dims == header - 4,
      IOError,
      "[{}] {}: truncated: expected a {}-byte header, found {} bytes",
      op,
      path,
      header,
      4 + got_dims);
  std::vector<int64_t> dims;
  uint64_t count = 1;
  bool overflow = false;
  for (int d = 0; d < ndims; ++d) {
    dims.push_back(int64_t(be32(head + 4 + 4 * d)));
    overflow = overflow || __builtin_mul_overflow(count, uint64_t(dims.back()), &count);
  }
  const uint64_t room = src.max_inflated_size() - std::min<uint64_t>(src.disk_size(), header);
  if (!src.is_gzip())
    IGNIS_CHECK(
        !overflow && count == room,
        IOError,
        "[{}] {}: {}: the header promises {} data bytes, found {}",
        op,
        path,
        !overflow && count < room ? "trailing bytes" : "truncated",
        overflow ? std::string("more than 2^64") : std::to_string(count),
        room);
  IGNIS_CHECK(
      !overflow && count <= room,
      IOError,
      "[{}] {}: truncated: the header promises {} data bytes (dims {}), more than a gzip file "
      "of {} bytes can inflate to",
      op,
      path,
      overflow ? std::string("more than 2^64") : std::to_string(count),
      fmt::join(dims, " x "),
      src.disk_size());
  // Sizes with a zero hold no data yet can still be too large to lay out (the fuzzer's
  // 2^32-1 x 2^32-246 x 0).
  IGNIS_CHECK(
      ignis::detail::shape_fits(dims),
      IOError,
      "[{}] {}: dims {} describe more elements than a tensor can hold",
      op,
      path,
      fmt::join(dims, " x "));
  Tensor out = alloc(dims);
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  const size_t have = src.read(dst, size_t(count));
  uint8_t extra;
  const bool trailing = have == count && src.read(&extra, 1) == 1;
  IGNIS_CHECK(
      have == count && !trailing,
      IOError,
      "[{}] {}: {}: the header promises {} data bytes, found {}",
      op,
      path,
      trailing ? "trailing bytes" : "truncated",
      count,
      trailing ? std::string("more") : std::to_string(have));
  return out;
}

}  // namespace

Tensor read_idx_images(const std::string& path) {
  return read_idx(path, 3, "read_idx_images", "uint8 images, 3 dims", [](const Shape& d) {
    return empty({d[0], 1, d[1], d[2]}, kUInt8);
  });
}

Tensor read_idx_labels(const std::string& path, int64_t num_classes) {
  const Tensor raw = read_idx(
      path, 1, "read_idx_labels", "uint8 labels, 1 dim", [](const Shape& d) {
        return empty({d[0]}, kUInt8);
      });
  Tensor out = empty({raw.numel()}, kInt64);
  int64_t* dst = out.data_ptr<int64_t>();
  const uint8_t* src = raw.data_ptr<uint8_t>();
  for (int64_t i = 0; i < raw.numel(); ++i) {
    IGNIS_CHECK(
        int64_t(src[i]) < num_classes,
        IOError,
        "[read_idx_labels] {}: label {} of sample {} is out of range: expected < {}",
        path,
        int(src[i]),
        i,
        num_classes);
    dst[i] = src[i];
  }
  return out;
}

LabeledImages read_idx_pair(
    const std::string& images_path,
    const std::string& labels_path,
    std::vector<std::string> classes) {
  LabeledImages d;
  d.images = read_idx_images(images_path);
  d.labels = read_idx_labels(labels_path, int64_t(classes.size()));
  IGNIS_CHECK(
      d.images.size(0) == d.labels.size(0),
      IOError,
      "[read_idx] count mismatch: {} holds {} images but {} holds {} labels",
      images_path,
      d.images.size(0),
      labels_path,
      d.labels.size(0));
  d.classes = std::move(classes);
  return d;
}

namespace {

LabeledImages idx_split(const std::string& root, bool train, std::vector<std::string> classes) {
  const std::string prefix = root + "/" + (train ? "train" : "t10k");
  const std::string images =
      detail::first_existing({prefix + "-images-idx3-ubyte.gz", prefix + "-images-idx3-ubyte"});
  const std::string labels =
      detail::first_existing({prefix + "-labels-idx1-ubyte.gz", prefix + "-labels-idx1-ubyte"});
  return read_idx_pair(images, labels, std::move(classes));
}

}  // namespace

LabeledImages fashion_mnist(const std::string& root, bool train) {
  return idx_split(
      root,
      train,
      {"T-shirt/top",
       "Trouser",
       "Pullover",
       "Dress",
       "Coat",
       "Sandal",
       "Shirt",
       "Sneaker",
       "Bag",
       "Ankle boot"});
}

LabeledImages mnist(const std::string& root, bool train) {
  return idx_split(root, train, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"});
}

}  // namespace ignis::data
