// The safetensors writer. The header lists tensors in state-dict order with contiguous,
// gap-free data offsets, and is padded with spaces to a multiple of 8 bytes so that the data
// buffer starts aligned (as the reference implementation does). The file is written under a
// temporary name next to the target, fsynced, then renamed over it: a reader sees either the
// old file or the complete new one, never a torn write. Any failure removes the temp file.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "ignis/io.h"
#include "io/safetensors_format.h"

namespace ignis {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string errno_text() { return std::strerror(errno); }

// Owns the temp file until commit(): the destructor closes and unlinks it, which is what
// makes every early exit (an exception anywhere) leave the directory as it was.
class TempFile {
 public:
  // A name of its own for each save (process id and a counter, created exclusively): two
  // threads saving to one path at once each write their own file, and the last rename wins
  // whole; sharing one temp file, they interleaved into a file no reader could load while one
  // of them reported success. A leftover of a crashed process with the same id is stepped over.
  TempFile(std::string target) : target_(std::move(target)) {
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      tmp_ = target_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
      fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ >= 0 || errno != EEXIST) break;
    }
    IGNIS_CHECK(fd_ >= 0, IOError, "[save] cannot create '{}': {}", tmp_, errno_text());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      IGNIS_CHECK(w > 0, IOError, "[save] writing '{}' failed: {}", tmp_, errno_text());
      p += w;
      n -= static_cast<size_t>(w);
    }
  }

  // fsync before rename: otherwise a crash after the rename can expose a file whose
  // directory entry is new but whose data blocks never reached the disk.
  void commit() {
    IGNIS_CHECK(::fsync(fd_) == 0, IOError, "[save] fsync of '{}' failed: {}", tmp_, errno_text());
    int rc = ::close(fd_);
    fd_ = -1;
    IGNIS_CHECK(rc == 0, IOError, "[save] closing '{}' failed: {}", tmp_, errno_text());
    IGNIS_CHECK(
        ::rename(tmp_.c_str(), target_.c_str()) == 0,
        IOError,
        "[save] cannot rename '{}' to '{}': {}",
        tmp_,
        target_,
        errno_text());
    committed_ = true;
    // Make the rename itself durable; a failure here cannot undo it, so it is not an error.
    auto slash = target_.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : target_.substr(0, slash + 1);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  std::string target_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void save(
    const nn::StateDict& tensors,
    const std::string& path,
    const std::map<std::string, std::string>& metadata) {
  // Opened first so that a tensor that cannot be serialised exercises the same cleanup path
  // as an I/O error.
  TempFile file(path);

  // Contiguous CPU copies (a no-op for tensors that already are), kept alive until written.
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) {
    ordered_json meta = ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header[std::string(io_detail::kMetadataKey)] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    IGNIS_CHECK(
        name != io_detail::kMetadataKey,
        IOError,
        "[save] '{}': '{}' is reserved for metadata, not a tensor name",
        path,
        name);
    IGNIS_CHECK(t.defined(), IOError, "[save] '{}': tensor '{}' is undefined", path, name);
    Tensor c = t.detach().to(Device::cpu()).contiguous();
    uint64_t n = static_cast<uint64_t>(c.nbytes());
    header[name] = {
        {"dtype", io_detail::dtype_tag(c.dtype())},
        {"shape", c.sizes()},
        {"data_offsets", {offset, offset + n}}};
    offset += n;
    host.push_back(std::move(c));
  }

  std::string text;
  try {
    text = header.dump();  // refuses strings that are not UTF-8 (JSON must be)
  } catch (const nlohmann::json::exception& e) {
    throw IOError(fmt::format(
        "[save] '{}': a tensor name or metadata value is not valid UTF-8 ({})", path, e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t n = text.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  file.write(len, 8);
  file.write(text.data(), text.size());
  for (const Tensor& c : host)
    if (c.nbytes() > 0) file.write(c.data_ptr(), static_cast<size_t>(c.nbytes()));
  file.commit();
}

void save(
    const nn::Module& module,
    const std::string& path,
    const std::map<std::string, std::string>& metadata) {
  save(module.state_dict(), path, metadata);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  TempFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

void load(nn::Module& module, const std::string& path, bool strict) {
  module.load_state_dict(load_file(path).tensors, strict);
}

}  // namespace ignis
