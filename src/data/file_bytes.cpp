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

std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op) {
  IGNIS_CHECK(
      std::filesystem::is_regular_file(path),
      IOError,
      "[{}] cannot open {}: no such file",
      op,
      path);
  gzFile f = gzopen(path.c_str(), "rb");
  IGNIS_CHECK(f != nullptr, IOError, "[{}] cannot open {}: {}", op, path, std::strerror(errno));
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    const int n = gzread(f, chunk.data(), unsigned(chunk.size()));
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      throw IOError(fmt::format("[{}] {}: corrupt or truncated gzip data ({})", op, path, msg));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  // A gzip stream cut short reads as a clean end in some zlib versions; gzerror says
  // Z_BUF_ERROR ("unexpected end of file") then.
  int code = Z_OK;
  const char* msg = gzerror(f, &code);
  const std::string err = msg ? msg : "";
  gzclose(f);
  IGNIS_CHECK(
      code == Z_OK || code == Z_STREAM_END,
      IOError,
      "[{}] {}: corrupt or truncated gzip data ({})",
      op,
      path,
      err);
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
