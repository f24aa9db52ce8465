// The readers on tiny files written here in each real format: every value read, the class
// names, and each bad input (missing, truncated, wrong magic, count mismatch, label out of
// range) by its message.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "data/data_test_util.h"
#include "ignis/data/readers.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

std::vector<uint8_t> pattern(size_t n, int mul) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t((i * size_t(mul) + 7) % 256);
  return v;
}

/// Writes a 3-image 2x4 IDX image file and its labels (plain or gzip) under root with MNIST's
/// names.
void write_mnist_split(
    const TempDir& dir, const std::string& prefix, bool gz, const std::vector<uint8_t>& labels) {
  const auto px = pattern(3 * 2 * 4, 13);
  auto w = gz ? write_gzip : write_bytes;
  const std::string ext = gz ? ".gz" : "";
  w(dir.path(prefix + "-images-idx3-ubyte" + ext), idx_bytes({3, 2, 4}, px));
  w(dir.path(prefix + "-labels-idx1-ubyte" + ext), idx_bytes({uint32_t(labels.size())}, labels));
}

TEST(IdxReader, PlainAndGzipGiveEveryValue) {
  for (bool gz : {false, true}) {
    TempDir dir;
    write_mnist_split(dir, "train", gz, {3, 0, 9});
    LabeledImages d = mnist(dir.path(""), true);
    ASSERT_EQ(d.images.sizes(), (Shape{3, 1, 2, 4}));
    EXPECT_EQ(d.images.dtype(), kUInt8);
    const auto px = pattern(24, 13);
    const auto got = d.images.to_vector<uint8_t>();
    EXPECT_EQ(got, px);
    EXPECT_EQ(d.labels.dtype(), kInt64);
    EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{3, 0, 9}));
    EXPECT_EQ(d.classes.size(), 10u);
  }
}

TEST(IdxReader, FashionNamesAndTestSplit) {
  TempDir dir;
  write_mnist_split(dir, "t10k", true, {9, 1, 2});
  LabeledImages d = fashion_mnist(dir.path(""), false);
  EXPECT_EQ(d.classes[0], "T-shirt/top");
  EXPECT_EQ(d.classes[9], "Ankle boot");
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{9, 1, 2}));
}

TEST(IdxReader, BadInputsByMessage) {
  TempDir dir;
  EXPECT_THROW_MSG(read_idx_images(dir.path("absent")), IOError, "no such file");
  EXPECT_THROW_MSG(read_idx_images(dir.path("absent")), IOError, dir.path("absent"));
  // Wrong magic: a label file read as images.
  write_bytes(dir.path("lab"), idx_bytes({2}, {1, 2}));
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("lab")),
      IOError,
      "expected 0x00000803 (uint8 images, 3 dims), found 0x00000801");
  write_bytes(dir.path("f32"), idx_bytes({2}, {1, 2}, 0x0D));
  EXPECT_THROW_MSG(read_idx_labels(dir.path("f32")), IOError, "found 0x00000d01");
  // Truncated: data, header, and gzip stream.
  auto full = idx_bytes({2, 2, 2}, pattern(8, 3));
  write_bytes(dir.path("short"), std::vector<uint8_t>(full.begin(), full.end() - 1));
  EXPECT_THROW_MSG(read_idx_images(dir.path("short")), IOError, "promises 8 data bytes, found 7");
  write_bytes(dir.path("long"), [&] {
    auto v = full;
    v.push_back(0);
    return v;
  }());
  EXPECT_THROW_MSG(read_idx_images(dir.path("long")), IOError, "trailing bytes");
  write_bytes(dir.path("hdr"), std::vector<uint8_t>(full.begin(), full.begin() + 10));
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("hdr")), IOError, "expected a 16-byte header, found 10");
  write_bytes(dir.path("tiny"), {0, 0});
  EXPECT_THROW_MSG(read_idx_images(dir.path("tiny")), IOError, "truncated");
  write_gzip(dir.path("gz"), idx_bytes({2, 20, 20}, pattern(800, 7)));
  {
    std::ifstream f(dir.path("gz"), std::ios::binary);
    std::vector<uint8_t> gz((std::istreambuf_iterator<char>(f)), {});
    write_bytes(dir.path("gzcut"), std::vector<uint8_t>(gz.begin(), gz.begin() + gz.size() / 2));
  }
  EXPECT_THROW_MSG(read_idx_images(dir.path("gzcut")), IOError, "gzcut");
  // Out-of-range label, and image/label count mismatch.
  write_bytes(dir.path("lab10"), idx_bytes({3}, {1, 10, 2}));
  EXPECT_THROW_MSG(
      read_idx_labels(dir.path("lab10")),
      IOError,
      "label 10 of sample 1 is out of range: expected < 10");
  write_bytes(dir.path("img"), full);
  write_bytes(dir.path("lab3"), idx_bytes({3}, {0, 1, 2}));
  EXPECT_THROW_MSG(
      read_idx_pair(dir.path("img"), dir.path("lab3"), {"a", "b", "c"}),
      IOError,
      "count mismatch: " + dir.path("img") + " holds 2 images but");
}

/// n CIFAR records with label bytes `labels[i]` (1 or 2 per record) and pixels pattern(i).
std::vector<uint8_t> cifar_records(const std::vector<std::vector<uint8_t>>& labels) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < labels.size(); ++i) {
    out.insert(out.end(), labels[i].begin(), labels[i].end());
    auto px = pattern(3072, int(i) + 1);
    out.insert(out.end(), px.begin(), px.end());
  }
  return out;
}

std::string names(int n, const std::string& stem) {
  std::string s;
  for (int i = 0; i < n; ++i) s += stem + std::to_string(i) + "\n";
  return s;
}

TEST(CifarReader, Cifar10EveryValueAndNames) {
  TempDir dir;
  for (int b = 1; b <= 5; ++b)
    write_bytes(
        dir.path("data_batch_" + std::to_string(b) + ".bin"),
        cifar_records({{uint8_t(b)}, {uint8_t(9 - b)}}));
  write_bytes(dir.path("test_batch.bin"), cifar_records({{7}}));
  write_text(dir.path("batches.meta.txt"), names(10, "class") + "\n");
  LabeledImages tr = cifar10(dir.path(""), true);
  ASSERT_EQ(tr.images.sizes(), (Shape{10, 3, 32, 32}));
  EXPECT_EQ(tr.labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 8, 2, 7, 3, 6, 4, 5, 5, 4}));
  const auto px = tr.images.to_vector<uint8_t>();
  for (int64_t i = 0; i < 10; ++i) {
    const auto expect = pattern(3072, int(i % 2) + 1);
    ASSERT_TRUE(std::equal(expect.begin(), expect.end(), px.begin() + i * 3072)) << "image " << i;
  }
  // Channel-plane layout: [i][c][y][x] = record byte c*1024 + y*32 + x.
  EXPECT_EQ(tr.images[0][2][5][7].item<int64_t>(), pattern(3072, 1)[2 * 1024 + 5 * 32 + 7]);
  EXPECT_EQ(tr.classes.size(), 10u);
  EXPECT_EQ(tr.classes[3], "class3");
  LabeledImages te = cifar10(dir.path(""), false);
  EXPECT_EQ(te.labels.to_vector<int64_t>(), (std::vector<int64_t>{7}));
}

TEST(CifarReader, Cifar100FineAndCoarse) {
  TempDir dir;
  write_bytes(dir.path("train.bin"), cifar_records({{19, 99}, {0, 42}, {3, 0}}));
  write_text(dir.path("fine_label_names.txt"), names(100, "fine"));
  write_text(dir.path("coarse_label_names.txt"), names(20, "coarse"));
  LabeledImages d = cifar100(dir.path(""), true);
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{99, 42, 0}));
  EXPECT_EQ(d.coarse_labels.to_vector<int64_t>(), (std::vector<int64_t>{19, 0, 3}));
  EXPECT_EQ(d.classes[99], "fine99");
  EXPECT_EQ(d.coarse_classes[19], "coarse19");
  const auto px = d.images.to_vector<uint8_t>();
  const auto expect = pattern(3072, 2);
  EXPECT_TRUE(std::equal(expect.begin(), expect.end(), px.begin() + 3072));
}

TEST(CifarReader, BadInputsByMessage) {
  TempDir dir;
  EXPECT_THROW_MSG(cifar10(dir.path(""), false), IOError, "test_batch.bin: no such file");
  auto rec = cifar_records({{1}, {2}});
  write_bytes(dir.path("test_batch.bin"), std::vector<uint8_t>(rec.begin(), rec.end() - 5));
  EXPECT_THROW_MSG(
      cifar10(dir.path(""), false), IOError, "multiple of 3073-byte records, found 6141 bytes");
  write_bytes(dir.path("test_batch.bin"), cifar_records({{1}, {10}}));
  EXPECT_THROW_MSG(
      cifar10(dir.path(""), false),
      IOError,
      "label byte 0 of record 1 is 10: out of range, expected < 10");
  write_bytes(dir.path("test_batch.bin"), cifar_records({{1}}));
  write_text(dir.path("batches.meta.txt"), names(9, "c"));
  EXPECT_THROW_MSG(cifar10(dir.path(""), false), IOError, "expected 10 class names, found 9");
  write_bytes(dir.path("test.bin"), cifar_records({{20, 1}}));
  EXPECT_THROW_MSG(cifar100(dir.path(""), false), IOError, "label byte 0 of record 0 is 20");
  write_bytes(dir.path("test.bin"), cifar_records({{2, 100}}));
  EXPECT_THROW_MSG(cifar100(dir.path(""), false), IOError, "expected < 100");
}

TEST(CsvReader, HeaderNamedLabelAndErrors) {
  TempDir dir;
  write_text(dir.path("a.csv"), "x,label,y\n1.5,2,-3\n0, 0 ,4e1\n");
  CsvData d = read_csv(dir.path("a.csv"), "label");
  EXPECT_EQ(d.features.sizes(), (Shape{2, 2}));
  EXPECT_EQ(d.features.to_vector<float>(), (std::vector<float>{1.5f, -3.f, 0.f, 40.f}));
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"x", "y"}));
  CsvData by_index = read_csv(dir.path("a.csv"), "1", true);
  EXPECT_EQ(by_index.labels.to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
  write_text(dir.path("b.csv"), "1,2\n3,4\n");
  EXPECT_EQ(
      read_csv(dir.path("b.csv"), "-1", false).labels.to_vector<int64_t>(),
      (std::vector<int64_t>{2, 4}));
  CsvData nh = read_csv(dir.path("b.csv"), "0", false);
  EXPECT_EQ(nh.labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(nh.features.to_vector<float>(), (std::vector<float>{2.f, 4.f}));
  write_text(dir.path("c.csv"), "a,b\n1,2\n3\n");
  EXPECT_THROW_MSG(read_csv(dir.path("c.csv")), IOError, "line 3: expected 2 columns, found 1");
  write_text(dir.path("d.csv"), "a,b\nn/a,1\n");
  EXPECT_THROW_MSG(read_csv(dir.path("d.csv")), IOError, "expected a number, found 'n/a'");
  write_text(dir.path("e.csv"), "a,b\n1,2.5\n");
  EXPECT_THROW_MSG(read_csv(dir.path("e.csv")), IOError, "non-negative integer label");
  EXPECT_THROW_MSG(read_csv(dir.path("a.csv"), "nope"), ValueError, "no label column named 'nope'");
}

}  // namespace
}  // namespace ignis::testing
