// The readers on files forged to make them allocate or read more than the file holds: IDX
// headers whose sizes overflow or exceed the file, gzip "bombs" (little on disk, much once
// inflated), and CSV numbers beyond the range of the label type. Each must end in an IOError
// naming the file and the problem, before anything of the forged size is allocated.
#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "data/file_bytes.h"
#include "ignis/data/readers.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

// The header of an IDX uint8 file with the given dims, without its data.
std::vector<uint8_t> idx_header(const std::vector<uint32_t>& dims) {
  return idx_bytes(dims, {});
}

std::vector<uint8_t> cat_bytes(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(HostileIdx, DimsWhoseProductOverflowsAreRefused) {
  TempDir dir;
  // 2^31 * 2^31 * 4 = 2^64, which is 0 modulo 2^64: with a wrapping product this header
  // matched an empty data section and then asked for a 2^64-byte tensor.
  write_bytes(dir.path("wrap"), idx_header({1u << 31, 1u << 31, 4}));
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("wrap")),
      IOError,
      dir.path("wrap") + ": truncated: the header promises more than 2^64 data bytes, found 0");
}

// Found by fuzz_idx: an image header with dims 2^32-1 x 2^32-246 x 0 promises 0 bytes, which
// the empty file matches, and then its element count overflowed (undefined behaviour).
TEST(HostileIdx, FuzzCrashZeroDimWithHugeOthers) {
  TempDir dir;
  write_bytes(dir.path("crash"), {0x00, 0x00, 0x08, 0x03, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0x0a, 0x00, 0x00, 0x00, 0x00});
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("crash")),
      IOError,
      dir.path("crash") + ": dims 4294967295 x 4294967050 x 0 describe more elements than a "
                          "tensor can hold");
}

TEST(HostileIdx, SizesBeyondThePlainFileAreRefusedBeforeAllocating) {
  TempDir dir;
  // 60000 x 28 x 28 promised, 10 bytes present.
  write_bytes(dir.path("big"), cat_bytes(idx_header({60000, 28, 28}), std::vector<uint8_t>(10)));
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("big")),
      IOError,
      "truncated: the header promises 47040000 data bytes, found 10");
  // 4 x 2^30 x 2^30 bytes promised: allocating that would fail (OutOfMemoryError), not the check.
  write_bytes(dir.path("huge"), idx_header({4, 1u << 30, 1u << 30}));
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("huge")),
      IOError,
      "truncated: the header promises 4611686018427387904 data bytes, found 0");
}

TEST(HostileIdx, GzipPromisingMoreThanDeflateCanHoldIsRefused) {
  TempDir dir;
  // A few dozen bytes of gzip cannot inflate to 2^40 bytes (deflate's best is about 1032:1).
  write_gzip(dir.path("claim.gz"), idx_header({1u << 20, 1u << 10, 1u << 10}));
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("claim.gz")),
      IOError,
      "promises 1099511627776 data bytes (dims 1048576 x 1024 x 1024), more than a gzip file of");
}

TEST(HostileIdx, GzipBombStopsAtTheDeclaredSize) {
  TempDir dir;
  // The header promises 10 bytes; 16 MiB of zeros follow (about 16 KiB once compressed).
  write_gzip(
      dir.path("bomb.gz"), cat_bytes(idx_header({1, 2, 5}), std::vector<uint8_t>(16 << 20)));
  EXPECT_THROW_MSG(
      read_idx_images(dir.path("bomb.gz")),
      IOError,
      dir.path("bomb.gz") + ": trailing bytes: the header promises 10 data bytes, found more");
  // The same bytes without the bomb load, so the refusal above is about the extra data.
  write_gzip(dir.path("ok.gz"), cat_bytes(idx_header({1, 2, 5}), std::vector<uint8_t>(10, 3)));
  EXPECT_EQ(read_idx_images(dir.path("ok.gz")).sizes(), (Shape{1, 1, 2, 5}));
}

TEST(HostileFiles, ReadFileBytesStopsAtItsLimit) {
  TempDir dir;
  write_gzip(dir.path("z.gz"), std::vector<uint8_t>(5000));
  EXPECT_THROW_MSG(
      data::detail::read_file_bytes(dir.path("z.gz"), "op", 1000),
      IOError,
      "[op] " + dir.path("z.gz") + ": more than 1000 bytes once inflated");
  write_bytes(dir.path("plain"), std::vector<uint8_t>(1001));
  EXPECT_THROW_MSG(
      data::detail::read_file_bytes(dir.path("plain"), "op", 1000), IOError, "more than 1000 bytes:");
  EXPECT_EQ(data::detail::read_file_bytes(dir.path("plain"), "op", 1001).size(), 1001u);
}

TEST(HostileCsv, LabelsBeyondInt64AreRefused) {
  TempDir dir;
  // Converting 1e30 to int64 is undefined behaviour; the range must be checked first.
  write_text(dir.path("big.csv"), "x,label\n1,1e30\n");
  EXPECT_THROW_MSG(
      read_csv(dir.path("big.csv")), IOError, "line 2, column 2 (label): expected a non-negative integer label or a class name, found '1e30'");
  write_text(dir.path("edge.csv"), "x,label\n1,9223372036854775808\n");
  EXPECT_THROW_MSG(read_csv(dir.path("edge.csv")), IOError, "found '9223372036854775808'");
  // "nan" is not a number to a label column: it is a class name, never converted.
  write_text(dir.path("nan.csv"), "x,label\n1,nan\n");
  EXPECT_EQ(read_csv(dir.path("nan.csv")).classes, std::vector<std::string>{"nan"});
}

}  // namespace
}  // namespace ignis::testing
