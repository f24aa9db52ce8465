// CIFAR-10 / CIFAR-100 binary batches: fixed-size records (label bytes, then 3072 pixel bytes
// in R, G, B planes of 32x32 row-major), so the file size must be a whole number of records
// and the pixels copy straight into [N, 3, 32, 32] without reordering.
#include <cstring>

#include "core/error.h"
#include "data/file_bytes.h"
#include "ignis/data/readers.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace {
constexpr int64_t kPixels = 3 * 32 * 32;

std::vector<std::string> read_names(const std::string& path, size_t expected, const char* op) {
  std::vector<std::string> names;
  for (auto& line : detail::read_text_lines(path, op))
    if (!line.empty()) names.push_back(line);
  IGNIS_CHECK(
      names.size() == expected,
      IOError,
      "[{}] {}: expected {} class names, found {}",
      op,
      path,
      expected,
      names.size());
  return names;
}

/// Reads the files in order and joins them.
LabeledImages read_cifar_files(
    const std::vector<std::string>& files,
    int label_bytes,
    const std::vector<int64_t>& num_classes) {
  std::vector<Tensor> images;
  std::vector<std::vector<Tensor>> labels(static_cast<size_t>(label_bytes));
  for (const auto& f : files) {
    Tensor im;
    std::vector<Tensor> lb;
    read_cifar_file(f, label_bytes, num_classes, im, lb);
    images.push_back(im);
    for (int k = 0; k < label_bytes; ++k) labels[size_t(k)].push_back(lb[size_t(k)]);
  }
  LabeledImages d;
  d.images = images.size() == 1 ? images[0] : cat(images, 0);
  auto join = [](const std::vector<Tensor>& t) { return t.size() == 1 ? t[0] : cat(t, 0); };
  d.labels = join(labels.back());
  if (label_bytes == 2) d.coarse_labels = join(labels[0]);
  return d;
}

}  // namespace

void read_cifar_file(
    const std::string& path,
    int label_bytes,
    const std::vector<int64_t>& num_classes,
    Tensor& images,
    std::vector<Tensor>& labels) {
  IGNIS_CHECK(
      label_bytes >= 1 && size_t(label_bytes) == num_classes.size(),
      ValueError,
      "[read_cifar] {} label bytes need as many class counts, got {}",
      label_bytes,
      num_classes.size());
  const std::vector<uint8_t> bytes = detail::read_file_bytes(path, "read_cifar");
  const int64_t record = label_bytes + kPixels;
  const int64_t size = int64_t(bytes.size());
  IGNIS_CHECK(
      size > 0 && size % record == 0,
      IOError,
      "[read_cifar] {}: truncated or not a CIFAR batch: expected a positive multiple of "
      "{}-byte records, found {} bytes",
      path,
      record,
      size);
  const int64_t n = size / record;
  images = empty({n, 3, 32, 32}, kUInt8);
  labels.assign(size_t(label_bytes), Tensor());
  std::vector<int64_t*> lab(static_cast<size_t>(label_bytes));
  for (int k = 0; k < label_bytes; ++k) {
    labels[size_t(k)] = empty({n}, kInt64);
    lab[size_t(k)] = labels[size_t(k)].data_ptr<int64_t>();
  }
  uint8_t* px = images.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* rec = bytes.data() + i * record;
    for (int k = 0; k < label_bytes; ++k) {
      IGNIS_CHECK(
          int64_t(rec[k]) < num_classes[size_t(k)],
          IOError,
          "[read_cifar] {}: label byte {} of record {} is {}: out of range, expected < {}",
          path,
          k,
          i,
          int(rec[k]),
          num_classes[size_t(k)]);
      lab[size_t(k)][i] = rec[k];
    }
    std::memcpy(px + i * kPixels, rec + label_bytes, size_t(kPixels));
  }
}

LabeledImages cifar10(const std::string& dir, bool train) {
  std::vector<std::string> files;
  if (train)
    for (int b = 1; b <= 5; ++b) files.push_back(dir + "/data_batch_" + std::to_string(b) + ".bin");
  else
    files.push_back(dir + "/test_batch.bin");
  LabeledImages d = read_cifar_files(files, 1, {10});
  d.classes = read_names(dir + "/batches.meta.txt", 10, "cifar10");
  return d;
}

LabeledImages cifar100(const std::string& dir, bool train) {
  LabeledImages d = read_cifar_files({dir + (train ? "/train.bin" : "/test.bin")}, 2, {20, 100});
  d.classes = read_names(dir + "/fine_label_names.txt", 100, "cifar100");
  d.coarse_classes = read_names(dir + "/coarse_label_names.txt", 20, "cifar100");
  return d;
}

}  // namespace ignis::data
