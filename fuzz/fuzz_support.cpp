#include "fuzz_support.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace ignis::fuzz {

std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = [] {
    const int f = memfd_create("ignis-fuzz-input", 0);
    if (f < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    return f;
  }();
  // A short write or a failed truncate would fuzz the wrong bytes: stop rather than lie.
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::perror("writing the fuzz input");
    std::abort();
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

std::string as_named_file(const uint8_t* data, size_t size, const std::string& relative) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "ignis-fuzz-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    static const std::string made = tmpl;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(made, ec);
    });
    return fs::path(tmpl);
  }();
  static std::set<std::string> linked;
  const std::string target = as_file(data, size);
  const fs::path link = dir / relative;
  if (linked.insert(relative).second) {
    fs::create_directories(link.parent_path());
    fs::create_symlink(target, link);
  }
  return link.string();
}

}  // namespace ignis::fuzz
