// Writers of the image tests: PNG files of any colour type, bit depth and interlacing written
// with libpng from sample values the test chose (so expectations are computed from those
// values, not from a decoder), and the reader of image_reference.py's oracle files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ignis::testing {

struct PngSpec {
  int width = 0, height = 0;
  int color_type = 0;  ///< PNG_COLOR_TYPE_*
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<uint16_t> samples;  ///< row-major, channels interleaved (palette: indices)
  std::vector<uint8_t> palette;   ///< RGB triples (palette images)
};
void write_png(const std::string& path, const PngSpec& spec);

/// The bytes of a file (for cutting and corrupting).
std::vector<uint8_t> read_bytes(const std::string& path);

}  // namespace ignis::testing
