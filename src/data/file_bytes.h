// Reading the data files: plain or gzip (zlib detects gzip by content, so a .gz name is not
// required), always with a limit on how much is inflated, so a small forged file cannot make a
// reader allocate gigabytes (a "gzip bomb").
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ignis::data::detail {

/// Deflate encodes at best 258 bytes in 2 bits, so a gzip file of n bytes cannot inflate to
/// more than about 1032 n bytes; a header that promises more than that is forged.
inline constexpr uint64_t kMaxInflateRatio = 1032;
/// How much a reader without a size in its header (CIFAR, CSV) reads or inflates before
/// giving up: a CIFAR-100 training batch, the largest file these readers meet, is 154 MB, so
/// 1 GiB leaves room and still stops a bomb before it exhausts memory.
inline constexpr uint64_t kMaxFileBytes = uint64_t(1) << 30;

/// A file opened for sequential reading, inflated as it is read when it is gzip.
class ByteSource {
 public:
  /// IOError "[op] cannot open <path>: ..." when it is missing or not a regular file.
  ByteSource(const std::string& path, const char* op);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  /// Reads up to n bytes into dst and returns how many were read: fewer than n only at the
  /// end of the data. IOError "[op] <path>: corrupt or truncated gzip data" when inflating fails.
  size_t read(void* dst, size_t n);
  /// Whether the file is gzip (as opposed to read as it is).
  bool is_gzip();
  /// The file's size on disk (compressed size for gzip).
  uint64_t disk_size() const { return disk_size_; }
  /// The most bytes this file can hold once inflated: its size when plain, and
  /// kMaxInflateRatio times it (plus a block's slack) when gzip.
  uint64_t max_inflated_size();

 private:
  gzFile f_ = nullptr;
  std::string path_;
  const char* op_;
  uint64_t disk_size_ = 0;
};

/// The bytes of path, gunzipped when it is gzip. IOError "[op] cannot open <path>: ..." when
/// it is missing, "[op] <path>: corrupt or truncated gzip data" when inflating fails, and
/// "[op] <path>: more than <max_bytes> bytes" when it holds (or inflates to) more than max_bytes.
std::vector<uint8_t> read_file_bytes(
    const std::string& path, const char* op, uint64_t max_bytes = kMaxFileBytes);
/// The bytes of path exactly as stored (no gzip inflating): for formats that carry their own
/// compression and are told apart by their first bytes (PNG, JPEG). Same errors as above.
std::vector<uint8_t> read_raw_file_bytes(const std::string& path, const char* op);
/// The lines of a text file (trailing '\r' removed), through read_file_bytes.
std::vector<std::string> read_text_lines(const std::string& path, const char* op);
/// The first existing path of the candidates (tried in order), else the first one.
std::string first_existing(const std::vector<std::string>& candidates);

}  // namespace ignis::data::detail
