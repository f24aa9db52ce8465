// The readers on the real data sets, when present: CIFAR-10 beside the source tree (path from
// CMake, IGNIS_TEST_CIFAR10_DIR) and Debian's Fashion-MNIST. Skipped with a message otherwise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ignis/data/readers.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

std::vector<int64_t> class_counts(const Tensor& labels, int64_t k) {
  std::vector<int64_t> c(size_t(k), 0);
  for (int64_t l : labels.to_vector<int64_t>()) ++c[size_t(l)];
  return c;
}

TEST(RealData, Cifar10) {
  const std::string dir = IGNIS_TEST_CIFAR10_DIR;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "CIFAR-10 not found at " << dir;
  LabeledImages tr = cifar10(dir, true), te = cifar10(dir, false);
  EXPECT_EQ(tr.images.sizes(), (Shape{50000, 3, 32, 32}));
  EXPECT_EQ(te.images.sizes(), (Shape{10000, 3, 32, 32}));
  EXPECT_EQ(class_counts(tr.labels, 10), std::vector<int64_t>(10, 5000));
  EXPECT_EQ(class_counts(te.labels, 10), std::vector<int64_t>(10, 1000));
  EXPECT_EQ(
      tr.classes,
      (std::vector<std::string>{
          "airplane",
          "automobile",
          "bird",
          "cat",
          "deer",
          "dog",
          "frog",
          "horse",
          "ship",
          "truck"}));
  // The first test record, read byte by byte here.
  std::ifstream f(dir + "/test_batch.bin", std::ios::binary);
  std::vector<unsigned char> rec(3073);
  f.read(reinterpret_cast<char*>(rec.data()), 3073);
  ASSERT_TRUE(f);
  EXPECT_EQ(te.labels[0].item<int64_t>(), int64_t(rec[0]));
  for (int c = 0; c < 3; ++c)
    for (int yx : {0, 33, 500, 1023})
      EXPECT_EQ(
          te.images[0][c][yx / 32][yx % 32].item<int64_t>(),
          int64_t(rec[size_t(1 + c * 1024 + yx)]))
          << "channel " << c << " pixel " << yx;
}

TEST(RealData, FashionMnist) {
  if (!std::filesystem::exists(kFashionMnistRoot))
    GTEST_SKIP() << "Fashion-MNIST not installed at " << kFashionMnistRoot
                 << " (Debian package dataset-fashion-mnist)";
  LabeledImages tr = fashion_mnist(), te = fashion_mnist(kFashionMnistRoot, false);
  EXPECT_EQ(tr.images.sizes(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(te.images.sizes(), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(class_counts(tr.labels, 10), std::vector<int64_t>(10, 6000));
  EXPECT_EQ(class_counts(te.labels, 10), std::vector<int64_t>(10, 1000));
  const Tensor x = tr.images.to(kFloat64) / 255.0;
  EXPECT_NEAR(x.mean().item<double>(), 0.286, 0.001);
  EXPECT_NEAR(ignis::std(x, {}, 0).item<double>(), 0.353, 0.001);
}

}  // namespace
}  // namespace ignis::testing
