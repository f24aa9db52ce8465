// JPEG seeds for fuzz_image: small files of each kind the decoder handles, encoded with
// libjpeg-turbo from sample values chosen here (the image tests make theirs with PIL, which a
// C++ seed writer cannot call).
#pragma once

#include <cstdint>
#include <vector>

struct JpegSpec {
  int width = 0, height = 0;
  int components = 3;      ///< 1 grey, 3 YCbCr, 4 CMYK (Adobe-marked, as Photoshop writes it)
  bool subsampled = true;  ///< 4:2:0 chroma (else 4:4:4)
  bool progressive = false;
  int restart_rows = 0;  ///< a restart marker every N MCU rows (0: none)
};

/// Grey, 4:2:0 and 4:4:4 colour, progressive, with restart markers, CMYK.
std::vector<JpegSpec> jpeg_kinds();
/// The file's bytes; samples are a gradient with a pattern, so every block has detail.
std::vector<uint8_t> jpeg_bytes(const JpegSpec& spec);
