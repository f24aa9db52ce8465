// Reproducible splits: every permutation comes from ignis's randperm with a Generator seeded
// by the caller, so a split depends only on (n, lengths, seed) — and for the stratified split,
// on the labels.
#include <cmath>
#include <map>
#include <numeric>

#include "core/error.h"
#include "ignis/data/dataset.h"
#include "ignis/ops.h"

namespace ignis::data {

std::vector<int64_t> split_sizes(int64_t n, const std::vector<double>& lengths) {
  IGNIS_CHECK(!lengths.empty(), ValueError, "[random_split] no lengths given");
  const double total = std::accumulate(lengths.begin(), lengths.end(), 0.0);
  std::vector<int64_t> sizes;
  if (std::abs(total - 1.0) <= 1e-9 && total <= 1.0 + 1e-9) {
    // Fractions, rounded as torch.utils.data.random_split does.
    int64_t used = 0;
    for (double f : lengths) {
      IGNIS_CHECK(f >= 0 && f <= 1, ValueError, "[random_split] fraction {} is not in [0, 1]", f);
      sizes.push_back(int64_t(std::floor(double(n) * f)));
      used += sizes.back();
    }
    for (int64_t r = 0; r < n - used; ++r) ++sizes[size_t(r) % sizes.size()];
    return sizes;
  }
  int64_t sum = 0;
  for (double c : lengths) {
    IGNIS_CHECK(
        c >= 0 && c == std::floor(c),
        ValueError,
        "[random_split] length {} is neither a fraction (the lengths sum to {}, not 1) nor "
        "a whole count",
        c,
        total);
    sizes.push_back(int64_t(c));
    sum += sizes.back();
  }
  IGNIS_CHECK(
      sum == n,
      ValueError,
      "[random_split] the counts sum to {} but the data set has {} samples",
      sum,
      n);
  return sizes;
}

namespace {

std::vector<int64_t> permutation(int64_t n, Generator& gen) {
  return n == 0 ? std::vector<int64_t>{} : randperm(n, kInt64, &gen).to_vector<int64_t>();
}

}  // namespace

std::vector<std::vector<int64_t>> split_indices(
    int64_t n, const std::vector<double>& lengths, uint64_t seed) {
  const std::vector<int64_t> sizes = split_sizes(n, lengths);
  Generator gen(seed);
  const std::vector<int64_t> perm = permutation(n, gen);
  std::vector<std::vector<int64_t>> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.emplace_back(perm.begin() + start, perm.begin() + start + s);
    start += s;
  }
  return parts;
}

std::vector<std::vector<int64_t>> stratified_split_indices(
    const Tensor& labels, const std::vector<double>& lengths, uint64_t seed) {
  IGNIS_CHECK(
      labels.dim() == 1,
      ShapeError,
      "[stratified_split] labels must be 1-D, got {} dims",
      labels.dim());
  const std::vector<int64_t> lab = labels.to(kInt64).to_vector<int64_t>();
  std::map<int64_t, std::vector<int64_t>> by_class;  // ordered: classes in ascending order
  for (size_t i = 0; i < lab.size(); ++i) by_class[lab[i]].push_back(int64_t(i));
  Generator gen(seed);
  std::vector<std::vector<int64_t>> parts(lengths.size());
  for (auto& [cls, members] : by_class) {
    const std::vector<int64_t> sizes = split_sizes(int64_t(members.size()), lengths);
    const std::vector<int64_t> perm = permutation(int64_t(members.size()), gen);
    int64_t start = 0;
    for (size_t p = 0; p < sizes.size(); ++p) {
      for (int64_t k = start; k < start + sizes[p]; ++k)
        parts[p].push_back(members[size_t(perm[size_t(k)])]);
      start += sizes[p];
    }
  }
  // Interleave the classes within each part.
  for (auto& part : parts) {
    const std::vector<int64_t> perm = permutation(int64_t(part.size()), gen);
    std::vector<int64_t> shuffled(part.size());
    for (size_t k = 0; k < part.size(); ++k) shuffled[k] = part[size_t(perm[k])];
    part = std::move(shuffled);
  }
  return parts;
}

namespace {
std::vector<std::shared_ptr<Subset>> subsets(
    const DatasetPtr& dataset, std::vector<std::vector<int64_t>> parts) {
  std::vector<std::shared_ptr<Subset>> out;
  for (auto& p : parts) out.push_back(std::make_shared<Subset>(dataset, std::move(p)));
  return out;
}
}  // namespace

std::vector<std::shared_ptr<Subset>> random_split(
    const DatasetPtr& dataset, const std::vector<double>& lengths, uint64_t seed) {
  return subsets(dataset, split_indices(dataset->size(), lengths, seed));
}

std::vector<std::shared_ptr<Subset>> stratified_split(
    const DatasetPtr& dataset,
    const Tensor& labels,
    const std::vector<double>& lengths,
    uint64_t seed) {
  IGNIS_CHECK(
      labels.dim() == 1 && labels.size(0) == dataset->size(),
      ShapeError,
      "[stratified_split] expected {} labels, got shape with {} dims",
      dataset->size(),
      labels.dim());
  return subsets(dataset, stratified_split_indices(labels, lengths, seed));
}

}  // namespace ignis::data
