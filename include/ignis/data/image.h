// Image files (PNG, JPEG) and the geometric helpers of image pipelines (resize, centre crop).
//
// Decoding. The format is told by the file's first bytes (PNG: 89 50 4E 47 0D 0A 1A 0A;
// JPEG: FF D8 FF), never by its name. The result is uint8 [H, W, C] with C = 1 (grey) or
// C = 3 (RGB), the raw sample values (gamma, sRGB and ICC chunks are not applied, as in PIL
// and torchvision). How each kind of file maps:
//   PNG grey, 1/2/4/8 bit        -> C = 1, scaled to 0..255 (a 1-bit 1 is 255), like PIL's "L"
//   PNG grey + alpha             -> C = 1, alpha dropped (PIL's convert("L") of "LA")
//   PNG RGB                      -> C = 3
//   PNG RGBA                     -> C = 3, alpha dropped, not composited (PIL's convert("RGB"))
//   PNG palette                  -> C = 3, the palette's colours (a tRNS transparency ignored)
//   PNG 16 bit (any colour type) -> the high byte of each sample (v >> 8), as PIL reads 16-bit
//                                   RGB; then mapped as above
//   JPEG greyscale               -> C = 1
//   JPEG YCbCr / RGB             -> C = 3, libjpeg-turbo's defaults (accurate integer IDCT,
//                                   fancy upsampling), the same decode PIL gives
//   JPEG CMYK / YCCK             -> C = 3; Adobe files store CMYK inverted, which is undone,
//                                   then PIL's conversion R = (255 - K) - C (255 - K) / 255
//                                   (rounded as PIL's MULDIV255), likewise G from M, B from Y
// Bad input (missing, not PNG/JPEG, truncated, corrupt, absurd dimensions) throws
// ignis::IOError "[read_image] <path>: expected ..., found ...". The decoded size is bounded
// by what the file's size can hold (PNG's deflate expands at most 1032:1), so a forged header
// cannot make the reader allocate gigabytes.
//
// Resizing follows torchvision's tensor resize with antialias=False, i.e.
// torch.nn.functional.interpolate(mode="bilinear", align_corners=False) on float32:
//   scale = float(in) / float(out); src = max(scale * (i + 0.5) - 0.5, 0);
//   i0 = int(src) (at most in - 1); i1 = min(i0 + 1, in - 1); l1 = src - i0; l0 = 1 - l1;
//   out = (x[y0][x0] l0x + x[y0][x1] l1x) l0y + (x[y1][x0] l0x + x[y1][x1] l1x) l1y,
// in float32; uint8 results are rounded half to even (torch.round) — so a value within a
// float32 rounding error of .5 may differ by one from a float64 computation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::data {

/// The image file at path as uint8 [H, W, C], C = 1 or 3 (mapping above).
Tensor read_image(const std::string& path);
/// The same from bytes already in memory; `name` is what error messages call them.
Tensor decode_image(const std::vector<uint8_t>& bytes, const std::string& name);

/// Bilinear resize (rule above) of uint8 or float32 [C, H, W] or [B, C, H, W] images to
/// height x width; same dtype, contiguous.
Tensor resize(const Tensor& images, int64_t height, int64_t width);
/// torchvision's Resize(size) with an int: the shorter side becomes `size`, the longer one
/// int(size * long / short) (truncated), keeping the aspect ratio.
Tensor resize_shorter(const Tensor& images, int64_t size);
/// torchvision's CenterCrop: top = round((H - height) / 2), left = round((W - width) / 2)
/// (rounding half to even, as Python's round); an image smaller than the crop is first padded
/// with zeros, (d / 2) before and (d + 1) / 2 after. [C, H, W] or [B, C, H, W]; contiguous.
Tensor center_crop(const Tensor& images, int64_t height, int64_t width);
/// center_crop(resize_shorter(images, size), size, size), the same values, computing only the
/// crop's pixels: an image of extreme aspect ratio (1 x 10^6 pixels fits in a 2 KB PNG)
/// would otherwise be resized to gigabytes (32 x 32 * 10^6 per channel) before the crop.
Tensor resize_shorter_center_crop(const Tensor& images, int64_t size);

}  // namespace ignis::data
