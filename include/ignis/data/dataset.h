// Data sets: indexable collections of examples (one tensor per field, e.g. image and label),
// the views over them (Subset, ConcatDataset) and their reproducible splits.
// get() and get_batch() are const and may be called from several loader threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::data {

struct LabeledImages;

/// One example: a tensor per field (for images: {image [C, H, W], label []}).
using Example = std::vector<Tensor>;

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  /// Example i (0 <= i < size(); IndexError otherwise).
  virtual Example get(int64_t i) const = 0;
  /// The examples at `indices` collated: one contiguous tensor per field with the batch as dim
  /// 0. The default stacks get(i); tensor-backed sets gather in one index_select per field.
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
};
using DatasetPtr = std::shared_ptr<const Dataset>;

/// Equal-length tensors; example i is {t[i] for each t}.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> tensors);
  int64_t size() const override { return size_; }
  Example get(int64_t i) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
  int64_t size_ = 0;
};
/// {images, labels} of a reader's result as a data set.
std::shared_ptr<TensorDataset> make_dataset(const LabeledImages& d);

/// The samples of `base` at `indices`, in that order.
class Subset : public Dataset {
 public:
  Subset(DatasetPtr base, std::vector<int64_t> indices);
  int64_t size() const override { return int64_t(indices_.size()); }
  Example get(int64_t i) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<int64_t>& indices() const { return indices_; }
  const DatasetPtr& base() const { return base_; }

 private:
  DatasetPtr base_;
  std::vector<int64_t> indices_;
};

/// The data sets one after another.
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<DatasetPtr> parts);
  int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }
  Example get(int64_t i) const override;

 private:
  std::vector<DatasetPtr> parts_;
  std::vector<int64_t> ends_;  // cumulative sizes
};

/// n random samples: uint8 images of `sample_shape` uniform in [0, 255] and int64 labels in
/// [0, num_classes), drawn with ignis's Philox generator from `seed` (same seed, same data).
class SyntheticDataset : public TensorDataset {
 public:
  SyntheticDataset(int64_t n, const Shape& sample_shape, int64_t num_classes, uint64_t seed);
};

// ---- splitting -----------------------------------------------------------------------------
// `lengths` are fractions when they sum to 1 (each in [0, 1]) and sample counts otherwise
// (non-negative integers summing to n), as in torch.utils.data.random_split. Fractions round
// like PyTorch's: floor(n * f) each, then the remaining samples go one each to parts 0, 1, 2 ...
// round-robin. The parts are disjoint and cover every sample.
/// The part sizes for n samples.
std::vector<int64_t> split_sizes(int64_t n, const std::vector<double>& lengths);
/// Indices of each part: randperm(n) from Generator(seed), cut in order into the part sizes.
std::vector<std::vector<int64_t>> split_indices(
    int64_t n, const std::vector<double>& lengths, uint64_t seed);
/// Stratified by label: each class (labels int64 [n], values >= 0) is permuted and cut by the
/// rounding above on its own, so each part holds every class in the given proportion (sizes can
/// then differ from the unstratified ones by up to the number of classes); each part's
/// indices are then shuffled.
std::vector<std::vector<int64_t>> stratified_split_indices(
    const Tensor& labels, const std::vector<double>& lengths, uint64_t seed);
std::vector<std::shared_ptr<Subset>> random_split(
    const DatasetPtr& dataset, const std::vector<double>& lengths, uint64_t seed);
std::vector<std::shared_ptr<Subset>> stratified_split(
    const DatasetPtr& dataset,
    const Tensor& labels,
    const std::vector<double>& lengths,
    uint64_t seed);

}  // namespace ignis::data
