// PNG decoding with libpng (mapping of colour types and depths: ignis/data/image.h).
//
// libpng reports errors by longjmp to the last setjmp. The two stages that can fail (header,
// rows) are functions holding only plain data; the output tensor and row pointers are made in
// decode_png between them, after the header's size has been checked against the file size.
#include <png.h>

#include <csetjmp>
#include <cstring>

#include "core/error.h"
#include "data/image_codecs.h"
#include "ignis/ops.h"

namespace ignis::data::detail {

namespace {

struct PngInput {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0, pos = 0;
  char error[200] = "";
};

void on_error(png_structp png, png_const_charp msg) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(in->error, sizeof in->error, "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // e.g. unknown ancillary chunks: harmless

void on_read(png_structp png, png_bytep out, size_t n) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (n > in->size - in->pos) png_error(png, "file ends early (truncated)");
  std::memcpy(out, in->data + in->pos, n);
  in->pos += n;
}

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int channels = 0;
  size_t rowbytes = 0;
  int bit_depth = 0, color_type = 0;
};

// Reads the header and sets the transforms to 8-bit grey or RGB. Plain data only (longjmp).
bool read_header(PngInput& in, PngHeader& h) {
  if (setjmp(png_jmpbuf(in.png))) return false;
  png_read_info(in.png, in.info);
  png_get_IHDR(
      in.png, in.info, &h.width, &h.height, &h.bit_depth, &h.color_type, nullptr, nullptr, nullptr);
  if (h.color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(in.png);
  if (h.color_type == PNG_COLOR_TYPE_GRAY && h.bit_depth < 8)
    png_set_expand_gray_1_2_4_to_8(in.png);
  if (h.bit_depth == 16) png_set_strip_16(in.png);  // keeps the high byte
  // Drops an alpha channel, including the one palette expansion makes of a tRNS chunk.
  png_set_strip_alpha(in.png);
  png_set_interlace_handling(in.png);
  png_read_update_info(in.png, in.info);
  h.channels = png_get_channels(in.png, in.info);
  h.rowbytes = png_get_rowbytes(in.png, in.info);
  return true;
}

bool read_rows(PngInput& in, png_bytepp rows) {
  if (setjmp(png_jmpbuf(in.png))) return false;
  png_read_image(in.png, rows);
  png_read_end(in.png, nullptr);
  return true;
}

/// Frees libpng's structures however decode_png leaves.
struct PngGuard {
  PngInput& in;
  ~PngGuard() { png_destroy_read_struct(&in.png, &in.info, nullptr); }
};

}  // namespace

Tensor decode_png(const std::vector<uint8_t>& bytes, const std::string& name) {
  PngInput in;
  in.data = bytes.data();
  in.size = bytes.size();
  in.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &in, on_error, on_warning);
  IGNIS_CHECK(in.png != nullptr, IOError, "[read_image] {}: cannot start libpng", name);
  PngGuard guard{in};
  in.info = png_create_info_struct(in.png);
  IGNIS_CHECK(in.info != nullptr, IOError, "[read_image] {}: cannot start libpng", name);
  png_set_read_fn(in.png, &in, on_read);
  PngHeader h;
  IGNIS_CHECK(
      read_header(in, h),
      IOError,
      "[read_image] {}: expected a valid PNG header, found a corrupt one ({})",
      name,
      in.error);
  IGNIS_CHECK(
      h.channels == 1 || h.channels == 3,
      IOError,
      "[read_image] {}: expected grey or RGB samples after conversion, found {} channels",
      name,
      h.channels);
  // Deflate expands at most 1032:1; each row also has a filter byte.
  const uint64_t raw = (uint64_t(h.rowbytes) + 1) * h.height;
  IGNIS_CHECK(
      h.width > 0 && h.height > 0 && raw <= decoded_limit(bytes.size(), 1032),
      IOError,
      "[read_image] {}: expected dimensions a {}-byte PNG can hold, found {}x{} (forged or "
      "corrupt header)",
      name,
      bytes.size(),
      h.width,
      h.height);
  Tensor out = empty({int64_t(h.height), int64_t(h.width), int64_t(h.channels)}, kUInt8);
  std::vector<png_bytep> rows(h.height);
  uint8_t* base = out.data_ptr<uint8_t>();
  for (png_uint_32 y = 0; y < h.height; ++y) rows[y] = base + size_t(y) * h.rowbytes;
  IGNIS_CHECK(
      read_rows(in, rows.data()),
      IOError,
      "[read_image] {}: expected complete PNG image data, found corrupt or truncated data ({})",
      name,
      in.error);
  return out;
}

}  // namespace ignis::data::detail
