// Numeric CSV. The first byte chooses the options (bit 0: a header row; bit 1: the label
// column by name "label" or by index -1); the rest is the file. A bad file must end in
// ignis::IOError, a label column that does not exist in ignis::ValueError.
#include "fuzz_support.h"
#include "ignis/data/readers.h"
#include "ignis/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool header = data[0] & 1;
  const char* label = (data[0] & 2) ? "label" : "-1";
  const std::string path = ignis::fuzz::as_file(data + 1, size - 1);
  try {
    (void)ignis::data::read_csv(path, label, header);
  } catch (const ignis::IOError&) {
  } catch (const ignis::ValueError&) {
  }
  return 0;
}
