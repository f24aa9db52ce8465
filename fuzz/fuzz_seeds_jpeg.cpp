#include "fuzz_seeds_jpeg.h"

// jpeglib.h uses size_t and FILE without including their headers.
#include <cstddef>
#include <cstdio>
// (separate block: keeps the include order above)
#include <jpeglib.h>

#include <cstdlib>

std::vector<JpegSpec> jpeg_kinds() {
  return {
      {12, 9, 1, false, false, 0},
      {17, 11, 3, true, false, 0},
      {16, 16, 3, false, false, 0},
      {21, 13, 3, true, true, 0},
      {24, 40, 3, true, false, 1},
      {9, 10, 4, false, false, 0},
  };
}

std::vector<uint8_t> jpeg_bytes(const JpegSpec& s) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);  // errors exit the program: the specs above are all valid
  jpeg_create_compress(&c);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buffer, &size);
  c.image_width = JDIMENSION(s.width);
  c.image_height = JDIMENSION(s.height);
  c.input_components = s.components;
  c.in_color_space = s.components == 1 ? JCS_GRAYSCALE : s.components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 85, TRUE);
  if (s.components == 3 && !s.subsampled)
    for (int i = 0; i < 3; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  if (s.progressive) jpeg_simple_progression(&c);
  c.restart_in_rows = s.restart_rows;
  if (s.components == 4) c.write_Adobe_marker = TRUE;
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(size_t(s.width) * size_t(s.components));
  while (c.next_scanline < c.image_height) {
    const int y = int(c.next_scanline);
    for (int x = 0; x < s.width; ++x)
      for (int k = 0; k < s.components; ++k)
        row[size_t(x * s.components + k)] = uint8_t((x * 255 / s.width + y * 11 + k * 60 + ((x ^ y) & 3) * 16) & 0xFF);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> out(buffer, buffer + size);
  jpeg_destroy_compress(&c);
  std::free(buffer);
  return out;
}
