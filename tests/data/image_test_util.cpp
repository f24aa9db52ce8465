#include "data/image_test_util.h"

#include <png.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace ignis::testing {

void write_png(const std::string& path, const PngSpec& s) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  // libpng's default error handler aborts the test, which is what a writer bug should do.
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(
      png,
      info,
      png_uint_32(s.width),
      png_uint_32(s.height),
      s.bit_depth,
      s.color_type,
      s.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
      PNG_COMPRESSION_TYPE_DEFAULT,
      PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> pal;
  for (size_t i = 0; i + 2 < s.palette.size(); i += 3)
    pal.push_back({s.palette[i], s.palette[i + 1], s.palette[i + 2]});
  if (!pal.empty()) png_set_PLTE(png, info, pal.data(), int(pal.size()));
  png_write_info(png, info);
  if (s.bit_depth < 8) png_set_packing(png);  // rows hold one sample per byte
  const int channels = s.color_type == PNG_COLOR_TYPE_GRAY || s.color_type == PNG_COLOR_TYPE_PALETTE
                           ? 1
                           : s.color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                           : s.color_type == PNG_COLOR_TYPE_RGB        ? 3
                                                                       : 4;
  const size_t per_row = size_t(s.width) * size_t(channels);
  const size_t sample_bytes = s.bit_depth == 16 ? 2 : 1;
  std::vector<uint8_t> data(per_row * size_t(s.height) * sample_bytes);
  for (size_t i = 0; i < per_row * size_t(s.height); ++i) {
    if (sample_bytes == 2) {  // PNG is big-endian
      data[2 * i] = uint8_t(s.samples[i] >> 8);
      data[2 * i + 1] = uint8_t(s.samples[i]);
    } else {
      data[i] = uint8_t(s.samples[i]);
    }
  }
  std::vector<png_bytep> rows(size_t(s.height));
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = data.data() + y * per_row * sample_bytes;
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), {});
}

}  // namespace ignis::testing
