// The two decoders behind read_image (ignis/data/image.h), each taking the whole file in
// memory. Both keep libpng's / libjpeg's setjmp-longjmp error handling inside functions whose
// frames hold only plain data, so a longjmp never skips a destructor; the Tensor and buffers
// live in the caller's frame.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::data::detail {

/// uint8 [H, W, 1 or 3]; IOError "[read_image] <name>: ..." on bad input.
Tensor decode_png(const std::vector<uint8_t>& bytes, const std::string& name);
Tensor decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& name);

/// The most a file of `file_bytes` bytes may decode to, given the format's best compression
/// ratio (units of output per byte of input: PNG bytes, JPEG pixels), with a floor of 1 Mi
/// for tiny files.
inline uint64_t decoded_limit(size_t file_bytes, uint64_t ratio) {
  return uint64_t(file_bytes) * ratio + (uint64_t(1) << 20);
}

}  // namespace ignis::data::detail
