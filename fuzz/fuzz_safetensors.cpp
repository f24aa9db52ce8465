// safetensors: any bytes as a file for ignis::load_file. A well-formed file must load; any
// other must end in ignis::IOError. Anything else (a crash, a sanitizer report, another
// exception type, a leak, an allocation over libFuzzer's -rss_limit_mb) is a bug.
#include "fuzz_support.h"
#include "ignis/error.h"
#include "ignis/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ignis::TensorFile f = ignis::load_file(ignis::fuzz::as_file(data, size));
    (void)f;
  } catch (const ignis::IOError&) {
  }
  return 0;
}
