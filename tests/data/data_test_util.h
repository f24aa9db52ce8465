// Helpers of the data tests: a fresh temporary directory per test and writers of tiny files in
// the real formats (IDX plain or gzipped, CIFAR records), so the readers are checked on bytes
// the test chose.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ignis::testing {

/// A new empty directory under the system temp dir, removed when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
/// Writes bytes gzip-compressed (zlib's gzip writer).
void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);
/// An IDX file of uint8: header (0, 0, 0x08, dims.size(), big-endian sizes) + data.
std::vector<uint8_t> idx_bytes(
    const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data, uint8_t type = 0x08);

}  // namespace ignis::testing
