// Data sets and their views. TensorDataset gathers a batch with one index_select per field,
// so a batch costs one copy per field whatever its size.
#include "ignis/data/dataset.h"

#include <algorithm>

#include "core/error.h"
#include "ignis/data/readers.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace {
void check_index(int64_t i, int64_t n, const char* who) {
  IGNIS_CHECK(
      i >= 0 && i < n, IndexError, "[{}] index {} out of range for a data set of {}", who, i, n);
}
}  // namespace

Example Dataset::get_batch(const std::vector<int64_t>& indices) const {
  IGNIS_CHECK(!indices.empty(), ValueError, "[Dataset::get_batch] empty batch");
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) examples.push_back(get(i));
  Example out;
  for (size_t f = 0; f < examples[0].size(); ++f) {
    std::vector<Tensor> field;
    field.reserve(examples.size());
    for (const auto& e : examples) field.push_back(e.at(f));
    out.push_back(stack(field, 0));
  }
  return out;
}

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  IGNIS_CHECK(!tensors_.empty(), ValueError, "[TensorDataset] needs at least one tensor");
  size_ = tensors_[0].dim() > 0 ? tensors_[0].size(0) : -1;
  for (size_t k = 0; k < tensors_.size(); ++k)
    IGNIS_CHECK(
        tensors_[k].dim() > 0 && tensors_[k].size(0) == size_,
        ShapeError,
        "[TensorDataset] tensor {} has {} samples, tensor 0 has {}",
        k,
        tensors_[k].dim() > 0 ? tensors_[k].size(0) : 0,
        size_);
}

Example TensorDataset::get(int64_t i) const {
  check_index(i, size_, "TensorDataset");
  Example e;
  for (const auto& t : tensors_) e.push_back(t.select(0, i));
  return e;
}

Example TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices) check_index(i, size_, "TensorDataset");
  const Tensor idx = tensor(indices, std::nullopt, {kInt64, tensors_[0].device()});
  Example e;
  for (const auto& t : tensors_) e.push_back(index_select(t, 0, idx));
  return e;
}

std::shared_ptr<TensorDataset> make_dataset(const LabeledImages& d) {
  return std::make_shared<TensorDataset>(std::vector<Tensor>{d.images, d.labels});
}

Subset::Subset(DatasetPtr base, std::vector<int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  for (int64_t i : indices_) check_index(i, base_->size(), "Subset");
}

Example Subset::get(int64_t i) const {
  check_index(i, size(), "Subset");
  return base_->get(indices_[size_t(i)]);
}

Example Subset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) {
    check_index(i, size(), "Subset");
    mapped.push_back(indices_[size_t(i)]);
  }
  return base_->get_batch(mapped);
}

ConcatDataset::ConcatDataset(std::vector<DatasetPtr> parts) : parts_(std::move(parts)) {
  int64_t total = 0;
  for (const auto& p : parts_) ends_.push_back(total += p->size());
}

Example ConcatDataset::get(int64_t i) const {
  check_index(i, size(), "ConcatDataset");
  const size_t part = size_t(std::upper_bound(ends_.begin(), ends_.end(), i) - ends_.begin());
  const int64_t start = part == 0 ? 0 : ends_[part - 1];
  return parts_[part]->get(i - start);
}

SyntheticDataset::SyntheticDataset(
    int64_t n, const Shape& sample_shape, int64_t num_classes, uint64_t seed)
    : TensorDataset([&] {
        Generator gen(seed);
        Shape shape = {n};
        shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
        Tensor images = randint(0, 256, shape, kUInt8, &gen);
        Tensor labels = randint(0, num_classes, {n}, kInt64, &gen);
        return std::vector<Tensor>{images, labels};
      }()) {}

}  // namespace ignis::data
