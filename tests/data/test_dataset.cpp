// Data sets and splits: batch gathers equal per-item access, Subset/Concat map indices, and
// splits have PyTorch's sizes, are disjoint, cover everything, repeat from the seed, and the
// stratified split keeps class proportions.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ignis/data/dataset.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  return std::make_shared<TensorDataset>(
      std::vector<Tensor>{arange(n * 2, kFloat32).reshape({n, 2}), arange(n, kInt64)});
}

TEST(Dataset, TensorDatasetGetAndBatch) {
  auto ds = numbered(10);
  EXPECT_EQ(ds->size(), 10);
  Example e = ds->get(3);
  EXPECT_EQ(e[0].to_vector<float>(), (std::vector<float>{6, 7}));
  EXPECT_EQ(e[1].item<int64_t>(), 3);
  Example b = ds->get_batch({4, 0, 9});
  EXPECT_EQ(b[0].sizes(), (Shape{3, 2}));
  EXPECT_EQ(b[0].to_vector<float>(), (std::vector<float>{8, 9, 0, 1, 18, 19}));
  EXPECT_EQ(b[1].to_vector<int64_t>(), (std::vector<int64_t>{4, 0, 9}));
  // The generic (stacking) path gives the same batch.
  Example s = ds->Dataset::get_batch({4, 0, 9});
  EXPECT_TRUE(equal(s[0], b[0]));
  EXPECT_TRUE(equal(s[1], b[1]));
  EXPECT_THROW_MSG(ds->get(10), IndexError, "index 10 out of range");
  EXPECT_THROW_MSG(ds->get_batch({1, -1}), IndexError, "index -1");
  EXPECT_THROW_MSG(TensorDataset({zeros({3}), zeros({4})}), ShapeError, "has 4 samples");
}

TEST(Dataset, SubsetAndConcat) {
  auto ds = numbered(10);
  Subset sub(ds, {7, 2, 5});
  EXPECT_EQ(sub.size(), 3);
  EXPECT_EQ(sub.get(1)[1].item<int64_t>(), 2);
  EXPECT_EQ(sub.get_batch({2, 0})[1].to_vector<int64_t>(), (std::vector<int64_t>{5, 7}));
  EXPECT_THROW_MSG(Subset(ds, {10}), IndexError, "out of range");
  ConcatDataset cat_ds({ds, std::make_shared<Subset>(sub)});
  EXPECT_EQ(cat_ds.size(), 13);
  EXPECT_EQ(cat_ds.get(9)[1].item<int64_t>(), 9);
  EXPECT_EQ(cat_ds.get(10)[1].item<int64_t>(), 7);
  EXPECT_EQ(cat_ds.get_batch({12, 0})[1].to_vector<int64_t>(), (std::vector<int64_t>{5, 0}));
}

TEST(Dataset, SyntheticIsDeterministic) {
  SyntheticDataset a(20, {3, 4, 4}, 5, 7), b(20, {3, 4, 4}, 5, 7), c(20, {3, 4, 4}, 5, 8);
  EXPECT_EQ(a.tensors()[0].sizes(), (Shape{20, 3, 4, 4}));
  EXPECT_EQ(a.tensors()[0].dtype(), kUInt8);
  EXPECT_TRUE(equal(a.tensors()[0], b.tensors()[0]));
  EXPECT_TRUE(equal(a.tensors()[1], b.tensors()[1]));
  EXPECT_FALSE(equal(a.tensors()[0], c.tensors()[0]));
  for (int64_t l : a.tensors()[1].to_vector<int64_t>()) EXPECT_TRUE(l >= 0 && l < 5);
}

TEST(Split, SizesFollowPyTorchRounding) {
  EXPECT_EQ(split_sizes(10, {0.7, 0.1, 0.2}), (std::vector<int64_t>{7, 1, 2}));
  // floor: 3, 3, 3 -> remainder 2 goes to parts 0 and 1.
  EXPECT_EQ(split_sizes(11, {1.0 / 3, 1.0 / 3, 1.0 / 3}), (std::vector<int64_t>{4, 4, 3}));
  EXPECT_EQ(split_sizes(101, {0.7, 0.1, 0.2}), (std::vector<int64_t>{71, 10, 20}));
  EXPECT_EQ(split_sizes(10, {6, 4}), (std::vector<int64_t>{6, 4}));
  EXPECT_THROW_MSG(split_sizes(10, {6, 3}), ValueError, "sum to 9 but the data set has 10");
  EXPECT_THROW_MSG(split_sizes(10, {2.5, 7.5}), ValueError, "neither a fraction");
}

TEST(Split, DisjointCoveringReproducible) {
  auto ds = numbered(1001);
  auto parts = random_split(ds, {0.7, 0.1, 0.2}, 42);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0]->size(), 701);
  EXPECT_EQ(parts[1]->size(), 100);
  EXPECT_EQ(parts[2]->size(), 200);
  std::set<int64_t> seen;
  for (const auto& p : parts)
    for (int64_t i : p->indices()) EXPECT_TRUE(seen.insert(i).second) << "index " << i << " twice";
  EXPECT_EQ(seen.size(), 1001u);
  auto again = random_split(ds, {0.7, 0.1, 0.2}, 42);
  auto other = random_split(ds, {0.7, 0.1, 0.2}, 43);
  EXPECT_EQ(again[0]->indices(), parts[0]->indices());
  EXPECT_NE(other[0]->indices(), parts[0]->indices());
  // A split is a shuffle, not the identity.
  std::vector<int64_t> first(parts[0]->indices());
  EXPECT_FALSE(std::is_sorted(first.begin(), first.end()));
}

TEST(Split, StratifiedKeepsClassBalance) {
  // 3 classes of 100, 50, 30 samples in a fixed interleaved order.
  std::vector<int64_t> lab;
  for (int i = 0; i < 100; ++i) lab.push_back(0);
  for (int i = 0; i < 50; ++i) lab.push_back(1);
  for (int i = 0; i < 30; ++i) lab.push_back(2);
  std::rotate(lab.begin(), lab.begin() + 77, lab.end());
  const Tensor labels = tensor(lab);
  auto ds = std::make_shared<TensorDataset>(std::vector<Tensor>{arange(180, kInt64), labels});
  auto parts = stratified_split(ds, labels, {0.8, 0.2}, 5);
  const int64_t expect[2][3] = {{80, 40, 24}, {20, 10, 6}};
  std::set<int64_t> seen;
  for (size_t p = 0; p < 2; ++p) {
    int64_t count[3] = {0, 0, 0};
    for (int64_t i : parts[p]->indices()) {
      ++count[lab[size_t(i)]];
      EXPECT_TRUE(seen.insert(i).second);
    }
    for (int c = 0; c < 3; ++c) EXPECT_EQ(count[c], expect[p][c]) << "part " << p << " class " << c;
  }
  EXPECT_EQ(seen.size(), 180u);
  EXPECT_EQ(stratified_split(ds, labels, {0.8, 0.2}, 5)[1]->indices(), parts[1]->indices());
}

}  // namespace
}  // namespace ignis::testing
