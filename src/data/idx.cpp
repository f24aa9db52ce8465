// IDX files (the MNIST family). Layout, all integers big-endian:
//   bytes 0-1  zero;  byte 2  element type (0x08 = uint8);  byte 3  number of dims d
//   d x uint32 sizes;  then prod(sizes) elements.
// The magic is thus 0x00000801 for labels and 0x00000803 for images; both are checked, and
// the data length must equal the product of the sizes exactly (a longer file is as suspect as
// a shorter one).
#include <cstring>

#include "core/error.h"
#include "data/file_bytes.h"
#include "ignis/data/readers.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace {

struct IdxFile {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> dims;
  size_t data_offset = 0;
};

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

/// Reads and validates an IDX file of uint8 elements with `ndims` dims.
IdxFile read_idx(const std::string& path, int ndims, const char* op, const char* what) {
  IdxFile f;
  f.bytes = detail::read_file_bytes(path, op);
  const uint32_t expected_magic = 0x0800u | uint32_t(ndims);
  IGNIS_CHECK(
      f.bytes.size() >= 4,
      IOError,
      "[{}] {}: truncated: expected a 4-byte IDX header, found {} bytes",
      op,
      path,
      f.bytes.size());
  const uint32_t magic = be32(f.bytes.data());
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
  IGNIS_CHECK(
      f.bytes.size() >= header,
      IOError,
      "[{}] {}: truncated: expected a {}-byte header, found {} bytes",
      op,
      path,
      header,
      f.bytes.size());
  uint64_t count = 1;
  for (int d = 0; d < ndims; ++d) {
    f.dims.push_back(int64_t(be32(f.bytes.data() + 4 + 4 * d)));
    count *= uint64_t(f.dims.back());
  }
  f.data_offset = header;
  const uint64_t have = f.bytes.size() - header;
  IGNIS_CHECK(
      have == count,
      IOError,
      "[{}] {}: {}: the header promises {} data bytes, found {}",
      op,
      path,
      have < count ? "truncated" : "trailing bytes",
      count,
      have);
  return f;
}

}  // namespace

Tensor read_idx_images(const std::string& path) {
  IdxFile f = read_idx(path, 3, "read_idx_images", "uint8 images, 3 dims");
  Tensor out = empty({f.dims[0], 1, f.dims[1], f.dims[2]}, kUInt8);
  if (out.numel() > 0)
    std::memcpy(out.data_ptr(), f.bytes.data() + f.data_offset, size_t(out.numel()));
  return out;
}

Tensor read_idx_labels(const std::string& path, int64_t num_classes) {
  IdxFile f = read_idx(path, 1, "read_idx_labels", "uint8 labels, 1 dim");
  Tensor out = empty({f.dims[0]}, kInt64);
  int64_t* dst = out.data_ptr<int64_t>();
  const uint8_t* src = f.bytes.data() + f.data_offset;
  for (int64_t i = 0; i < f.dims[0]; ++i) {
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
