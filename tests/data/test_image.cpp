// read_image on PNGs written here with libpng (every colour type and depth; expectations
// computed from the written samples) and on files written by PIL (expectations: PIL's own
// decode, via image_reference.py); resize and center_crop against torchvision and against a
// direct float64 computation (resize_shorter_center_crop against the two steps it fuses);
// and every kind of bad file by its message.
#include <gtest/gtest.h>
#include <png.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "data/data_test_util.h"
#include "data/image_test_util.h"
#include "ignis/data/image.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

uint32_t lcg(uint32_t& s) { return s = s * 1664525u + 1013904223u, s >> 8; }

struct Case {
  int color_type, depth;
  bool interlaced;
  int palette_size;  // palette images only
};

TEST(ReadImage, PngEveryColourTypeAndDepth) {
  TempDir dir;
  const std::vector<Case> cases = {
      {PNG_COLOR_TYPE_GRAY, 1, false, 0},      {PNG_COLOR_TYPE_GRAY, 2, false, 0},
      {PNG_COLOR_TYPE_GRAY, 4, false, 0},      {PNG_COLOR_TYPE_GRAY, 8, false, 0},
      {PNG_COLOR_TYPE_GRAY, 16, false, 0},     {PNG_COLOR_TYPE_GRAY_ALPHA, 8, false, 0},
      {PNG_COLOR_TYPE_GRAY_ALPHA, 16, false, 0}, {PNG_COLOR_TYPE_RGB, 8, false, 0},
      {PNG_COLOR_TYPE_RGB, 16, false, 0},      {PNG_COLOR_TYPE_RGB_ALPHA, 8, false, 0},
      {PNG_COLOR_TYPE_RGB_ALPHA, 16, false, 0}, {PNG_COLOR_TYPE_PALETTE, 8, false, 200},
      {PNG_COLOR_TYPE_PALETTE, 4, false, 11},  {PNG_COLOR_TYPE_RGB, 8, true, 0},
      {PNG_COLOR_TYPE_GRAY, 16, true, 0},
  };
  uint32_t seed = 12345;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "colour type " << c.color_type << ", " << c.depth
                                      << " bit" << (c.interlaced ? ", interlaced" : ""));
    PngSpec s;
    s.width = 13;
    s.height = 7;
    s.color_type = c.color_type;
    s.bit_depth = c.depth;
    s.interlaced = c.interlaced;
    const int in_ch = c.color_type == PNG_COLOR_TYPE_GRAY || c.color_type == PNG_COLOR_TYPE_PALETTE
                          ? 1
                      : c.color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                      : c.color_type == PNG_COLOR_TYPE_RGB        ? 3
                                                                  : 4;
    const uint32_t levels = c.palette_size ? uint32_t(c.palette_size) : (1u << c.depth);
    for (int i = 0; i < s.width * s.height * in_ch; ++i) s.samples.push_back(uint16_t(lcg(seed) % levels));
    for (int i = 0; i < 3 * c.palette_size; ++i) s.palette.push_back(uint8_t(lcg(seed)));
    const std::string path = dir.path("case.png");
    write_png(path, s);
    const Tensor img = read_image(path);
    // Expected, from the written samples: grey scaled to 8 bits, 16 bits by the high byte,
    // alpha dropped, palette indices looked up.
    const int out_ch = in_ch <= 2 && c.color_type != PNG_COLOR_TYPE_PALETTE ? 1 : 3;
    ASSERT_EQ(img.sizes(), (Shape{7, 13, out_ch}));
    std::vector<uint8_t> expect;
    for (int p = 0; p < s.width * s.height; ++p) {
      for (int k = 0; k < out_ch; ++k) {
        if (c.color_type == PNG_COLOR_TYPE_PALETTE) {
          expect.push_back(s.palette[size_t(3 * s.samples[size_t(p)] + k)]);
          continue;
        }
        const uint32_t v = s.samples[size_t(p * in_ch + k)];
        expect.push_back(
            c.depth == 16 ? uint8_t(v >> 8) : uint8_t(v * 255 / ((1u << c.depth) - 1)));
      }
    }
    EXPECT_EQ(img.to_vector<uint8_t>(), expect);
  }
}

// ---- PIL / torchvision as the oracle (image_reference.py) -------------------------------
#if IGNIS_IMAGE_REFERENCE
struct Reference {
  std::string kind, name, file;
  Shape shape;
};

class PilReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const std::string cmd =
        std::string(IGNIS_PYTHON) + " " + IGNIS_IMAGE_SCRIPT + " " + dir_->path("");
    ok_ = std::system(cmd.c_str()) == 0;
    std::ifstream m(dir_->path("manifest.txt"));
    std::string line;
    while (std::getline(m, line)) {
      std::istringstream ss(line);
      Reference r;
      int64_t a, b, c;
      ss >> r.kind >> r.name >> r.file >> a >> b >> c;
      r.shape = {a, b, c};
      refs_.push_back(r);
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_TRUE(ok_) << "image_reference.py failed"; }
  static std::vector<uint8_t> raw(const Reference& r) { return read_bytes(dir_->path(r.name + ".raw")); }
  static std::string path(const std::string& f) { return dir_->path(f); }

  static inline TempDir* dir_ = nullptr;
  static inline bool ok_ = false;
  static inline std::vector<Reference> refs_;
};

TEST_F(PilReference, DecodeEqualsPilEveryPixel) {
  int n = 0;
  for (const auto& r : refs_) {
    if (r.kind != "decode") continue;
    SCOPED_TRACE(r.file);
    const Tensor img = read_image(path(r.file));
    ASSERT_EQ(img.sizes(), r.shape);
    EXPECT_EQ(img.to_vector<uint8_t>(), raw(r));
    ++n;
  }
  EXPECT_EQ(n, 12);  // 7 PNG kinds, 5 JPEG kinds
}


TEST_F(PilReference, ResizeAndCropEqualTorchvision) {
  const Tensor img = read_image(path("rgb.png")).permute({2, 0, 1});
  int n = 0;
  for (const auto& r : refs_) {
    if (r.kind == "decode") continue;
    SCOPED_TRACE(r.name);
    const int64_t h = r.shape[0], w = r.shape[1];
    Tensor got;
    if (r.kind == "resize") got = resize(img, h, w);
    if (r.kind == "shorter") got = resize_shorter(img, std::min(h, w));
    if (r.kind == "crop") got = center_crop(img, h, w);
    ASSERT_EQ(got.sizes(), (Shape{3, h, w}));
    if (r.kind == "crop")
      EXPECT_EQ(got.to_vector<uint8_t>(), raw(r));
    else
      expect_bilinear_equal(got.to_vector<uint8_t>(), raw(r), bilinear_f64(img, h, w));
    ++n;
  }
  EXPECT_EQ(n, 10);
}

TEST_F(PilReference, BadJpegsNameTheFile) {
  const auto jpg = read_bytes(path("rgb420.jpg"));
  const std::string cut = path("cut.jpg");
  write_bytes(cut, std::vector<uint8_t>(jpg.begin(), jpg.begin() + jpg.size() / 2));
  EXPECT_THROW_MSG(read_image(cut), IOError, cut + ": expected complete JPEG image data");
  write_bytes(cut, std::vector<uint8_t>(jpg.begin(), jpg.begin() + 40));
  EXPECT_THROW_MSG(read_image(cut), IOError, cut + ": expected a valid JPEG header");
  // Bytes of the entropy-coded data replaced by a marker: corrupt data, not a guess.
  auto bad = jpg;
  for (size_t i = bad.size() / 2; i < bad.size() / 2 + 64; i += 2) bad[i] = 0xFF, bad[i + 1] = 0xD9;
  write_bytes(cut, bad);
  EXPECT_THROW_MSG(read_image(cut), IOError, cut + ": expected complete JPEG image data");
  // A forged frame size (SOF0: FF C0, length, precision, height, width) in a small file.
  bad = jpg;
  for (size_t i = 2; i + 8 < bad.size(); ++i)
    if (bad[i] == 0xFF && bad[i + 1] == 0xC0) {
      bad[i + 5] = bad[i + 7] = 0xEA;  // 60000 = 0xEA60
      bad[i + 6] = bad[i + 8] = 0x60;
      break;
    }
  write_bytes(cut, bad);
  EXPECT_THROW_MSG(read_image(cut), IOError, "found 60000x60000 (forged or corrupt header)");
}
#endif

TEST(Resize, DirectFloat64Computation) {
  Generator gen(3);
  const Tensor img = randint(0, 256, {2, 3, 9, 14}, kUInt8, &gen);
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{4, 5}, {9, 14}, {20, 31}, {1, 3}, {17, 7}}) {
    SCOPED_TRACE(::testing::Message() << h << "x" << w);
    const Tensor r8 = resize(img, h, w), rf = resize(img.to(kFloat32), h, w);
    ASSERT_EQ(r8.sizes(), (Shape{2, 3, h, w}));
    std::vector<double> exact;
    for (int64_t b = 0; b < 2; ++b) {
      const auto e = bilinear_f64(img[b], h, w);
      exact.insert(exact.end(), e.begin(), e.end());
    }
    const auto f = rf.to_vector<float>();
    for (size_t i = 0; i < f.size(); ++i) ASSERT_NEAR(f[i], exact[i], 1e-3) << "element " << i;
    std::vector<uint8_t> rounded;
    for (double e : exact) rounded.push_back(uint8_t(std::nearbyint(e)));
    expect_bilinear_equal(r8.to_vector<uint8_t>(), rounded, exact);
  }
  // Same size: the identity.
  EXPECT_EQ(resize(img, 9, 14).to_vector<uint8_t>(), img.to_vector<uint8_t>());
}

TEST(CenterCrop, WindowAndZeroPadding) {
  Generator gen(4);
  const Tensor img = randint(0, 256, {2, 7, 10}, kUInt8, &gen);
  const auto v = img.to_vector<uint8_t>();
  // 7 -> 4 rows: (7 - 4) / 2 = 1.5 rounds to 2 (half to even); 10 -> 5 columns: 2.5 -> 2.
  // 7 -> 9 rows: padded by 1 above and 1 below; 10 -> 4 columns: 3.
  struct Want { int64_t h, w, top, left; };
  for (const Want& c : {Want{4, 5, 2, 2}, Want{9, 4, -1, 3}, Want{3, 13, 2, -1}, Want{7, 10, 0, 0}}) {
    const Tensor out = center_crop(img, c.h, c.w);
    ASSERT_EQ(out.sizes(), (Shape{2, c.h, c.w}));
    const auto o = out.to_vector<uint8_t>();
    for (int64_t ch = 0; ch < 2; ++ch)
      for (int64_t y = 0; y < c.h; ++y)
        for (int64_t x = 0; x < c.w; ++x) {
          const int64_t sy = y + c.top, sx = x + c.left;
          const uint8_t want = sy >= 0 && sy < 7 && sx >= 0 && sx < 10 ? v[size_t((ch * 7 + sy) * 10 + sx)] : 0;
          ASSERT_EQ(o[size_t((ch * c.h + y) * c.w + x)], want) << c.h << "x" << c.w << " at " << y << "," << x;
        }
  }
  EXPECT_EQ(resize_shorter(img, 14).sizes(), (Shape{2, 14, 20}));
  EXPECT_EQ(resize_shorter(img.permute({0, 2, 1}), 3).sizes(), (Shape{2, 4, 3}));  // int(3*10/7)
}

TEST(ResizeShorterCenterCrop, EqualsResizeThenCrop) {
  Generator gen(5);
  // Wide, tall, square, already the size, odd offsets (half to even) and a 1-pixel side.
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{
           {9, 14}, {14, 9}, {12, 12}, {8, 8}, {7, 10}, {1, 23}, {31, 2}}) {
    const Tensor img = randint(0, 256, {2, 3, h, w}, kUInt8, &gen);
    for (int64_t size : {1, 3, 8, 16}) {
      SCOPED_TRACE(::testing::Message() << h << "x" << w << " to " << size);
      const Tensor want = center_crop(resize_shorter(img, size), size, size);
      const Tensor got = resize_shorter_center_crop(img, size);
      ASSERT_EQ(got.sizes(), (Shape{2, 3, size, size}));
      EXPECT_EQ(got.to_vector<uint8_t>(), want.to_vector<uint8_t>());
      const Tensor f = img.to(kFloat32);
      EXPECT_EQ(
          resize_shorter_center_crop(f, size).to_vector<float>(),
          center_crop(resize_shorter(f, size), size, size).to_vector<float>());
    }
  }
}

// A 1 x 2^18 grey PNG: resize_shorter to 32 would be 32 x 2^23 pixels per channel (768 MB
// as ImageFolder's RGB) before the crop; the window is computed alone, and checked here
// against a float64 evaluation of the resize rule at the crop's columns (every row is the
// same). Below 2^23 resized columns, float32 holds the source positions exactly, as float64
// does. (A 1 x 10^6 image, a 2 KB PNG, would have asked for 3 GB.)
TEST(ResizeShorterCenterCrop, ExtremeAspectRatioComputesOnlyTheCrop) {
  TempDir dir;
  const int64_t w = int64_t(1) << 18, size = 32;
  PngSpec s;
  s.width = int(w);
  s.height = 1;
  s.color_type = PNG_COLOR_TYPE_GRAY;
  s.samples.resize(size_t(w));
  for (int64_t x = 0; x < w; ++x) s.samples[size_t(x)] = uint16_t((x * 7 + x / 5) % 256);
  write_png(dir.path("strip.png"), s);
  const Tensor chw = read_image(dir.path("strip.png")).permute({2, 0, 1});
  const Tensor out = resize_shorter_center_crop(chw, size);
  ASSERT_EQ(out.sizes(), (Shape{1, size, size}));
  const int64_t nw = size * w;  // the resized width; the crop starts at its middle
  const int64_t left = (nw - size) / 2;
  const double scale = double(w) / double(nw);
  std::vector<double> exact;
  for (int64_t y = 0; y < size; ++y)
    for (int64_t x = 0; x < size; ++x) {
      const double src = std::max(scale * (double(left + x) + 0.5) - 0.5, 0.0);
      const int64_t i0 = std::min<int64_t>(int64_t(src), w - 1), i1 = std::min(i0 + 1, w - 1);
      const double l1 = src - double(i0);
      exact.push_back(s.samples[size_t(i0)] * (1 - l1) + s.samples[size_t(i1)] * l1);
    }
  std::vector<uint8_t> rounded;
  for (double e : exact) rounded.push_back(uint8_t(std::nearbyint(e)));
  expect_bilinear_equal(out.to_vector<uint8_t>(), rounded, exact);
}

/// A 1x1 PNG whose IHDR is then rewritten to `w` x `h` with a valid CRC.
std::vector<uint8_t> forged_png(const TempDir& dir, uint32_t w, uint32_t h) {
  PngSpec s;
  s.width = s.height = 1;
  s.color_type = PNG_COLOR_TYPE_RGB;
  s.samples = {1, 2, 3};
  write_png(dir.path("one.png"), s);
  auto b = read_bytes(dir.path("one.png"));
  // Signature (8), length (4), "IHDR" (4) at 12, width at 16, height at 20, CRC at 29.
  for (int k = 0; k < 4; ++k) b[size_t(16 + k)] = uint8_t(w >> (24 - 8 * k)), b[size_t(20 + k)] = uint8_t(h >> (24 - 8 * k));
  const uint32_t crc = uint32_t(crc32(0, b.data() + 12, 17));
  for (int k = 0; k < 4; ++k) b[size_t(29 + k)] = uint8_t(crc >> (24 - 8 * k));
  return b;
}

TEST(ReadImage, BadFilesNameTheFile) {
  TempDir dir;
  const std::string p = dir.path("bad.png");
  EXPECT_THROW_MSG(read_image(dir.path("absent.png")), IOError, dir.path("absent.png") + ": no such file");
  write_bytes(p, {});
  EXPECT_THROW_MSG(read_image(p), IOError, p + ": expected a PNG or JPEG file, found an empty file");
  write_text(p, "GIF89a....");
  EXPECT_THROW_MSG(read_image(p), IOError, p + ": expected a PNG (89 50 4E 47 0D 0A 1A 0A) or JPEG (FF D8 FF) file, found first bytes 47 49 46 38 39 61 2E 2E");
  // The extension does not matter: a PNG named .jpg decodes as PNG.
  PngSpec s;
  s.width = 40;
  s.height = 30;
  s.color_type = PNG_COLOR_TYPE_RGB;
  uint32_t seed = 9;
  for (int i = 0; i < 40 * 30 * 3; ++i) s.samples.push_back(uint16_t(lcg(seed) % 256));
  write_png(dir.path("png.jpg"), s);
  EXPECT_EQ(read_image(dir.path("png.jpg")).sizes(), (Shape{30, 40, 3}));
  const auto good = read_bytes(dir.path("png.jpg"));
  write_bytes(p, std::vector<uint8_t>(good.begin(), good.begin() + long(good.size() * 2 / 3)));
  EXPECT_THROW_MSG(read_image(p), IOError, p + ": expected complete PNG image data, found corrupt or truncated data");
  write_bytes(p, std::vector<uint8_t>(good.begin(), good.begin() + 20));
  EXPECT_THROW_MSG(read_image(p), IOError, p + ": expected a valid PNG header");
  auto flipped = good;
  flipped[flipped.size() / 2] ^= 0x55;  // inside IDAT: its CRC no longer matches
  write_bytes(p, flipped);
  EXPECT_THROW_MSG(read_image(p), IOError, p + ": expected complete PNG image data");
  write_bytes(p, forged_png(dir, 60000, 60000));
  EXPECT_THROW_MSG(read_image(p), IOError, p + ": expected dimensions a ");
  EXPECT_THROW_MSG(read_image(p), IOError, "found 60000x60000 (forged or corrupt header)");
}

}  // namespace
}  // namespace ignis::testing
