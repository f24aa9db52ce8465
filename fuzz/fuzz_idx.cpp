// IDX (plain): any bytes as an image file and as a label file. Valid files load; others
// must end in ignis::IOError.
#include "fuzz_support.h"
#include "ignis/data/readers.h"
#include "ignis/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ignis::fuzz::as_file(data, size);
  try {
    (void)ignis::data::read_idx_images(path);
  } catch (const ignis::IOError&) {
  }
  try {
    (void)ignis::data::read_idx_labels(path, 10);
  } catch (const ignis::IOError&) {
  }
  return 0;
}
