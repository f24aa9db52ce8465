// IDX through gzip. The first byte chooses what the rest is: even, an IDX file that this
// target gzips before the reader sees it (so the fuzzer explores IDX headers behind the
// inflater, including highly compressible "bombs" that promise little and inflate to much);
// odd, raw bytes handed over as they are (so it also explores broken gzip framing).
#include <zlib.h>

#include <vector>

#include "fuzz_support.h"
#include "ignis/data/readers.h"
#include "ignis/error.h"

namespace {

std::vector<uint8_t> gzip(const uint8_t* data, size_t size) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper rather than zlib's.
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<uint8_t> out(deflateBound(&z, uLong(size)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = uInt(size);
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string path;
  if (data[0] % 2 == 0) {
    const std::vector<uint8_t> gz = gzip(data + 1, size - 1);
    path = ignis::fuzz::as_file(gz.data(), gz.size());
  } else {
    path = ignis::fuzz::as_file(data + 1, size - 1);
  }
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
