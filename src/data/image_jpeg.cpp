// JPEG decoding with libjpeg-turbo (colour mapping: ignis/data/image.h).
//
// libjpeg reports errors through error_exit, which must not return; it longjmps back to the
// stage that started (header, then rows), each a function holding only plain data. Two
// deviations from libjpeg's defaults make bad files errors instead of grey guesses: the
// memory source fails at the end of the data (libjpeg's own inserts a fake end-of-image and
// goes on), and warnings about corrupt data are errors, except extraneous bytes between
// markers, which some encoders leave and which lose no data.
// jpeglib.h uses size_t and FILE without including their headers.
#include <cstddef>
#include <cstdio>
// (separate block: keeps the include order above)
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>

#include "core/error.h"
#include "data/image_codecs.h"
#include "ignis/ops.h"

namespace ignis::data::detail {

namespace {

struct JpegInput {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  jpeg_source_mgr src;
  std::jmp_buf jump;
  char error[JMSG_LENGTH_MAX] = "";
  bool created = false;
};

JpegInput& input_of(j_common_ptr cinfo) {
  // cinfo is the first member of JpegInput (standard layout), so the cast is exact.
  return *reinterpret_cast<JpegInput*>(cinfo);
}

[[noreturn]] void on_error(j_common_ptr cinfo) {
  JpegInput& in = input_of(cinfo);
  (*cinfo->err->format_message)(cinfo, in.error);
  std::longjmp(in.jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code != JWRN_EXTRANEOUS_DATA) on_error(cinfo);
}

void src_init(j_decompress_ptr) {}
boolean src_fill(j_decompress_ptr cinfo) {
  ERREXIT(cinfo, JERR_INPUT_EOF);  // truncated: an error, not a fake end-of-image
  return FALSE;
}
void src_skip(j_decompress_ptr cinfo, long n) {
  jpeg_source_mgr* s = cinfo->src;
  if (n <= 0) return;
  if (size_t(n) > s->bytes_in_buffer) ERREXIT(cinfo, JERR_INPUT_EOF);
  s->next_input_byte += n;
  s->bytes_in_buffer -= size_t(n);
}
void src_term(j_decompress_ptr) {}

struct JpegHeader {
  JDIMENSION width = 0, height = 0;
  int channels = 0;  ///< of the decoder's output: 1, 3 or 4 (CMYK)
  bool inverted = false;
};

bool read_header(JpegInput& in, JpegHeader& h) {
  if (setjmp(in.jump)) return false;
  jpeg_read_header(&in.cinfo, TRUE);
  const J_COLOR_SPACE cs = in.cinfo.jpeg_color_space;
  if (cs == JCS_GRAYSCALE)
    in.cinfo.out_color_space = JCS_GRAYSCALE;
  else if (cs == JCS_CMYK || cs == JCS_YCCK)
    in.cinfo.out_color_space = JCS_CMYK;
  else
    in.cinfo.out_color_space = JCS_RGB;
  jpeg_calc_output_dimensions(&in.cinfo);
  h.width = in.cinfo.output_width;
  h.height = in.cinfo.output_height;
  h.channels = in.cinfo.output_components;
  h.inverted = in.cinfo.out_color_space == JCS_CMYK && in.cinfo.saw_Adobe_marker;
  return true;
}

// PIL's MULDIV255: a * b / 255 rounded, in integers.
inline int muldiv255(int a, int b) {
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

/// Decodes every row into out (width * out_channels bytes per row); CMYK rows go through
/// `cmyk_row` (width * 4 bytes) and are converted to RGB.
bool read_rows(JpegInput& in, const JpegHeader& h, uint8_t* out, uint8_t* cmyk_row) {
  if (setjmp(in.jump)) return false;
  jpeg_start_decompress(&in.cinfo);
  const size_t out_row = size_t(h.width) * (h.channels == 4 ? 3 : size_t(h.channels));
  while (in.cinfo.output_scanline < in.cinfo.output_height) {
    uint8_t* row = out + size_t(in.cinfo.output_scanline) * out_row;
    JSAMPROW target = h.channels == 4 ? cmyk_row : row;
    jpeg_read_scanlines(&in.cinfo, &target, 1);
    if (h.channels == 4) {
      for (JDIMENSION x = 0; x < h.width; ++x) {
        const uint8_t* p = cmyk_row + 4 * size_t(x);
        const int inv = h.inverted ? 255 : 0;  // Adobe stores 255 - value
        const int nk = 255 - (p[3] ^ inv);
        for (int c = 0; c < 3; ++c) row[3 * size_t(x) + size_t(c)] = uint8_t(nk - muldiv255(p[c] ^ inv, nk));
      }
    }
  }
  jpeg_finish_decompress(&in.cinfo);
  return true;
}

bool create(JpegInput& in) {
  if (setjmp(in.jump)) return false;  // out of memory
  jpeg_create_decompress(&in.cinfo);
  in.created = true;
  return true;
}

struct JpegGuard {
  JpegInput& in;
  ~JpegGuard() {
    if (in.created) jpeg_destroy_decompress(&in.cinfo);
  }
};

}  // namespace

Tensor decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& name) {
  JpegInput in;
  in.cinfo.err = jpeg_std_error(&in.err);
  in.err.error_exit = on_error;
  in.err.emit_message = on_message;
  JpegGuard guard{in};
  IGNIS_CHECK(create(in), IOError, "[read_image] {}: cannot start libjpeg ({})", name, in.error);
  in.src.init_source = src_init;
  in.src.fill_input_buffer = src_fill;
  in.src.skip_input_data = src_skip;
  in.src.resync_to_restart = jpeg_resync_to_restart;
  in.src.term_source = src_term;
  in.src.next_input_byte = bytes.data();
  in.src.bytes_in_buffer = bytes.size();
  in.cinfo.src = &in.src;
  JpegHeader h;
  IGNIS_CHECK(
      read_header(in, h),
      IOError,
      "[read_image] {}: expected a valid JPEG header, found a corrupt or truncated one ({})",
      name,
      in.error);
  // A baseline JPEG needs at least a few bits per 8x8 block (about 170 pixels per byte with
  // 4:2:0 chroma and 1-bit codes); 256 pixels per byte of file, and 1 Mi pixels at least,
  // admits every real file while a forged 65535x65535 header in a small file is refused.
  const uint64_t pixels = uint64_t(h.width) * h.height;
  IGNIS_CHECK(
      h.width > 0 && h.height > 0 && pixels <= decoded_limit(bytes.size(), 256),
      IOError,
      "[read_image] {}: expected dimensions a {}-byte JPEG can hold, found {}x{} (forged or "
      "corrupt header)",
      name,
      bytes.size(),
      h.width,
      h.height);
  IGNIS_CHECK(
      h.channels == 1 || h.channels == 3 || h.channels == 4,
      IOError,
      "[read_image] {}: expected 1, 3 or 4 colour components, found {}",
      name,
      h.channels);
  const int64_t c = h.channels == 1 ? 1 : 3;
  Tensor out = empty({int64_t(h.height), int64_t(h.width), c}, kUInt8);
  std::vector<uint8_t> cmyk_row(h.channels == 4 ? size_t(h.width) * 4 : 0);
  IGNIS_CHECK(
      read_rows(in, h, out.data_ptr<uint8_t>(), cmyk_row.data()),
      IOError,
      "[read_image] {}: expected complete JPEG image data, found corrupt or truncated data ({})",
      name,
      in.error);
  return out;
}

}  // namespace ignis::data::detail
