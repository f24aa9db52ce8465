// Writers of the image tests: PNG files of any colour type, bit depth and interlacing written
// with libpng from sample values the test chose (so expectations are computed from those
// values, not from a decoder), and the float64 bilinear reference of the resize tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/tensor.h"

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

/// Direct float64 bilinear resize (align_corners=False, PyTorch's source-index rule) of the
/// box (top, left, bh x bw) of uint8 [C, H, W] to oh x ow; the whole image by default.
std::vector<double> bilinear_f64(
    const Tensor& chw, int64_t oh, int64_t ow, int64_t top = 0, int64_t left = 0, int64_t bh = -1,
    int64_t bw = -1);
/// got == want, except |got - want| == 1 where the float64 value lies within 1e-3 of a
/// rounding tie (float32 may round either way there).
void expect_bilinear_equal(
    const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::vector<double>& exact);

/// The bytes of a file (for cutting and corrupting).
std::vector<uint8_t> read_bytes(const std::string& path);

}  // namespace ignis::testing
