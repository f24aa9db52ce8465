#include "fuzz_support.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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

}  // namespace ignis::fuzz
