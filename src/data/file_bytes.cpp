// gzread inflates gzip files and passes other files through unchanged ("transparent" mode),
// so one code path reads both.
#include "data/file_bytes.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace ignis::data::detail {

ByteSource::ByteSource(const std::string& path, const char* op) : path_(path), op_(op) {
  std::error_code ec;
  IGNIS_CHECK(
      std::filesystem::is_regular_file(path, ec),
      IOError,
      "[{}] cannot open {}: no such file",
      op,
      path);
  disk_size_ = std::filesystem::file_size(path, ec);
  IGNIS_CHECK(!ec, IOError, "[{}] cannot open {}: {}", op, path, ec.message());
  f_ = gzopen(path.c_str(), "rb");
  IGNIS_CHECK(f_ != nullptr, IOError, "[{}] cannot open {}: {}", op, path, std::strerror(errno));
}

ByteSource::~ByteSource() { gzclose(f_); }

size_t ByteSource::read(void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    // gzread takes an unsigned count; read in chunks of at most 1 GiB.
    const unsigned want = unsigned(std::min<size_t>(n - done, size_t(1) << 30));
    const int got = gzread(f_, out + done, want);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f_, &code);
      throw IOError(fmt::format(
          "[{}] {}: corrupt or truncated gzip data ({})", op_, path_, msg ? msg : ""));
    }
    if (got == 0) break;
    done += size_t(got);
  }
  if (done < n) {
    // A gzip stream cut short reads as a clean end in some zlib versions; gzerror says
    // Z_BUF_ERROR ("unexpected end of file") then.
    int code = Z_OK;
    const char* msg = gzerror(f_, &code);
    IGNIS_CHECK(
        code == Z_OK || code == Z_STREAM_END,
        IOError,
        "[{}] {}: corrupt or truncated gzip data ({})",
        op_,
        path_,
        msg ? msg : "");
  }
  return done;
}

bool ByteSource::is_gzip() { return gzdirect(f_) == 0; }

uint64_t ByteSource::max_inflated_size() {
  // 1 KiB of slack covers the stored blocks and headers of a tiny stream.
  return is_gzip() ? disk_size_ * kMaxInflateRatio + 1024 : disk_size_;
}

std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op, uint64_t max_bytes) {
  ByteSource src(path, op);
  // Read straight into the result, a step at a time: the file's size (one step for a plain
  // file) clamped to [4 KiB, 1 MiB], so a small file costs no megabyte buffer.
  const size_t step = size_t(std::clamp<uint64_t>(src.disk_size() + 1, 4096, 1 << 20));
  std::vector<uint8_t> bytes;
  for (;;) {
    const size_t old = bytes.size();
    bytes.resize(old + step);
    const size_t n = src.read(bytes.data() + old, step);
    bytes.resize(old + n);
    if (n == 0) break;
    IGNIS_CHECK(
        bytes.size() <= max_bytes,
        IOError,
        "[{}] {}: more than {} bytes{}: not a file this reader accepts",
        op,
        path,
        max_bytes,
        src.is_gzip() ? " once inflated" : "");
  }
  return bytes;
}

std::vector<uint8_t> read_raw_file_bytes(const std::string& path, const char* op) {
  IGNIS_CHECK(
      std::filesystem::is_regular_file(path),
      IOError,
      "[{}] cannot open {}: no such file",
      op,
      path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  IGNIS_CHECK(f != nullptr, IOError, "[{}] cannot open {}: {}", op, path, std::strerror(errno));
  // One read of the size the file reports, then whatever a growing file added.
  const long size = std::fseek(f, 0, SEEK_END) == 0 ? std::ftell(f) : -1;
  std::rewind(f);
  std::vector<uint8_t> bytes(size_t(std::max(size, 0L)));
  size_t got = std::fread(bytes.data(), 1, bytes.size(), f);
  bytes.resize(got);
  uint8_t chunk[4096];
  while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + got);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  IGNIS_CHECK(!failed, IOError, "[{}] cannot read {}: {}", op, path, std::strerror(errno));
  return bytes;
}

std::vector<std::string> read_text_lines(const std::string& path, const char* op) {
  const std::vector<uint8_t> bytes = read_file_bytes(path, op);
  std::vector<std::string> lines;
  std::string cur;
  for (uint8_t b : bytes) {
    if (b == '\n') {
      if (!cur.empty() && cur.back() == '\r') cur.pop_back();
      lines.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(char(b));
    }
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

std::string first_existing(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates)
    if (std::filesystem::exists(c)) return c;
  return candidates.front();
}

}  // namespace ignis::data::detail
