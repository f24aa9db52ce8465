#include "data/image_test_util.h"

#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cmath>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "ignis/ops.h"

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

/// |got - want| <= 1 only where the float64 value sits within 1e-3 of a rounding tie (float32
/// rounding may then go either way); everywhere else exactly equal.
void expect_bilinear_equal(
    const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::vector<double>& exact) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    const double frac = exact[i] - std::floor(exact[i]);
    EXPECT_TRUE(std::abs(int(got[i]) - int(want[i])) == 1 && std::abs(frac - 0.5) < 1e-3)
        << "element " << i << ": " << int(got[i]) << " vs " << int(want[i]) << " (float64 "
        << exact[i] << ")";
  }
}

std::vector<double> bilinear_f64(
    const Tensor& chw, int64_t oh, int64_t ow, int64_t top, int64_t left, int64_t bh, int64_t bw) {
  const Tensor x = chw.contiguous();
  const int64_t C = x.size(0), H = x.size(1), W = x.size(2);
  if (bh < 0) bh = H;
  if (bw < 0) bw = W;
  const auto v = x.to(kFloat64).to_vector<double>();
  // Source position of output i: (i + 0.5) in / out - 0.5, at least 0; the two neighbours,
  // clamped to the box.
  auto taps = [](int64_t i, int64_t in, int64_t out, int64_t& a, int64_t& b, double& l) {
    const double src = std::max((double(i) + 0.5) * double(in) / double(out) - 0.5, 0.0);
    a = std::min<int64_t>(int64_t(std::floor(src)), in - 1);
    b = std::min<int64_t>(a + 1, in - 1);
    l = src - double(a);
  };
  std::vector<double> out;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        int64_t y0, y1, x0, x1;
        double ly, lx;
        taps(y, bh, oh, y0, y1, ly);
        taps(xo, bw, ow, x0, x1, lx);
        auto at = [&](int64_t yy, int64_t xx) {
          return v[size_t((c * H + top + yy) * W + left + xx)];
        };
        out.push_back(
            (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x1)) +
            ly * ((1 - lx) * at(y1, x0) + lx * at(y1, x1)));
      }
  return out;
}

}  // namespace ignis::testing
