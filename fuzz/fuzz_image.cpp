// PNG/JPEG decoding (read_image: the format by magic bytes, then libpng or libjpeg-turbo) and
// what an image folder does with the result. The first byte chooses: even, read_image alone;
// odd, ImageFolder::load (decode, grey/RGB conversion, resize of the shorter side, centre
// crop) to a side of 1 + (byte >> 2) % 64 with 1 channel (bit 1 set) or 3. The rest is the
// file. A bad file must end in ignis::IOError; a good one must give the documented shape,
// checked here, so a decoder that returned a wrong-sized tensor fails the run too.
#include <cstdio>
#include <cstdlib>

#include "fuzz_support.h"
#include "ignis/data/image.h"
#include "ignis/data/image_folder.h"
#include "ignis/error.h"

namespace {

[[noreturn]] void wrong(const char* what) {
  std::fprintf(stderr, "fuzz_image: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string path = ignis::fuzz::as_file(data + 1, size - 1);
  try {
    if ((mode & 1) == 0) {
      const ignis::Tensor img = ignis::data::read_image(path);
      if (img.dim() != 3 || img.size(0) < 1 || img.size(1) < 1 ||
          (img.size(2) != 1 && img.size(2) != 3) || img.dtype() != ignis::kUInt8)
        wrong("read_image returned a shape other than [H>0, W>0, 1 or 3] uint8");
    } else {
      const int64_t side = 1 + (mode >> 2) % 64, channels = (mode & 2) ? 1 : 3;
      const ignis::Tensor img = ignis::data::ImageFolder::load(path, side, channels);
      if (img.sizes() != ignis::Shape{channels, side, side})
        wrong("ImageFolder::load returned a shape other than [channels, side, side]");
    }
  } catch (const ignis::IOError&) {
  }
  return 0;
}
