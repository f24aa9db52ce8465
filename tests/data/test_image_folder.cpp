// ImageFolder on small trees written here: class order and labels, every pixel of images that
// need no resize, a 2x downscale (the mean of each 2x2 block), a centre crop, grey to RGB and
// RGB to grey, eager and lazy giving the same batches through the loader, and each error.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <filesystem>

#include "data/data_test_util.h"
#include "data/image_test_util.h"
#include "ignis/data/dataloader.h"
#include "ignis/data/image_folder.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;
namespace fs = std::filesystem;

/// A png of h x w with c channels (1 or 3) and samples f(y, x, k).
template <class F>
PngSpec png(int h, int w, int c, F f) {
  PngSpec s;
  s.width = w;
  s.height = h;
  s.color_type = c == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) s.samples.push_back(uint16_t(f(y, x, k) & 255));
  return s;
}

uint8_t px(const PngSpec& s, int y, int x, int k) {
  const int c = s.color_type == PNG_COLOR_TYPE_GRAY ? 1 : 3;
  return uint8_t(s.samples[size_t((y * s.width + x) * c + k)]);
}

struct Tree {
  TempDir dir;
  PngSpec exact, big, wide, grey;
  Tree() {
    fs::create_directories(dir.path("b_dog/nested"));
    fs::create_directories(dir.path("a_cat"));
    fs::create_directories(dir.path("c_grey"));
    exact = png(8, 8, 3, [](int y, int x, int k) { return y * 31 + x * 7 + k * 50; });
    big = png(16, 16, 3, [](int y, int x, int k) { return (y * 13) ^ (x * 29) ^ (k * 71); });
    wide = png(8, 12, 3, [](int y, int x, int k) { return y * 17 + x * 3 + k; });
    grey = png(8, 8, 1, [](int y, int x, int) { return y * 9 + x * 23; });
    write_png(dir.path("a_cat/2.png"), big);
    write_png(dir.path("a_cat/1.PNG"), exact);
    write_text(dir.path("a_cat/notes.txt"), "not an image, skipped by its extension");
    write_png(dir.path("b_dog/nested/3.jpg"), wide);  // a PNG named .jpg: read by content
    write_png(dir.path("c_grey/4.png"), grey);
  }
  std::string root() const { return dir.path(""); }
};

TEST(ImageFolder, ClassesLabelsAndEveryPixel) {
  Tree t;
  ImageFolder f(t.root(), {.size = 8});
  EXPECT_EQ(f.classes(), (std::vector<std::string>{"a_cat", "b_dog", "c_grey"}));
  ASSERT_EQ(f.size(), 4);
  EXPECT_EQ(fs::path(f.paths()[0]).filename(), "1.PNG");  // sorted: "1.PNG" < "2.png"
  EXPECT_EQ(fs::path(f.paths()[1]).filename(), "2.png");
  EXPECT_EQ(f.labels().to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 2}));
  ASSERT_EQ(f.images().sizes(), (Shape{4, 3, 8, 8}));
  const auto v = f.images().to_vector<uint8_t>();
  auto at = [&](int i, int k, int y, int x) { return v[size_t(((i * 3 + k) * 8 + y) * 8 + x)]; };
  for (int k = 0; k < 3; ++k)
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) {
        // Already 8x8: the pixels themselves, channels first.
        ASSERT_EQ(at(0, k, y, x), px(t.exact, y, x, k));
        // 16 -> 8: bilinear at source 2i + 0.5 is the mean of a 2x2 block, rounded half to even.
        const int sum = px(t.big, 2 * y, 2 * x, k) + px(t.big, 2 * y, 2 * x + 1, k) +
                        px(t.big, 2 * y + 1, 2 * x, k) + px(t.big, 2 * y + 1, 2 * x + 1, k);
        ASSERT_EQ(at(1, k, y, x), uint8_t(std::nearbyint(sum / 4.0))) << y << "," << x;
        // 8x12: the shorter side is already 8, so only the centre crop (columns 2..9).
        ASSERT_EQ(at(2, k, y, x), px(t.wide, y, x + 2, k));
        // Grey repeated into R, G and B.
        ASSERT_EQ(at(3, k, y, x), px(t.grey, y, x, 0));
      }
}

TEST(ImageFolder, GreyOutputUsesPilLuma) {
  Tree t;
  ImageFolder f(t.root(), {.size = 8, .channels = 1});
  ASSERT_EQ(f.images().sizes(), (Shape{4, 1, 8, 8}));
  const auto v = f.images().to_vector<uint8_t>();
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) {
      const uint32_t l = (px(t.exact, y, x, 0) * 19595u + px(t.exact, y, x, 1) * 38470u +
                          px(t.exact, y, x, 2) * 7471u + 0x8000u) >> 16;
      ASSERT_EQ(v[size_t(y * 8 + x)], l);
      ASSERT_EQ(v[size_t(3 * 64 + y * 8 + x)], px(t.grey, y, x, 0));
    }
}

TEST(ImageFolder, LazyEqualsEagerThroughTheLoader) {
  Tree t;
  auto eager = std::make_shared<ImageFolder>(t.root(), ImageFolderOptions{.size = 6});
  auto lazy = std::make_shared<ImageFolder>(t.root(), ImageFolderOptions{.size = 6, .eager = false});
  EXPECT_FALSE(lazy->images().defined());
  DataLoader a(eager, {.batch_size = 3, .shuffle = true, .seed = 5});
  DataLoader b(lazy, {.batch_size = 3, .shuffle = true, .seed = 5, .num_workers = 2});
  auto ib = b.begin();
  int batches = 0;
  for (auto& [x, y] : a) {
    ASSERT_FALSE(ib == b.end());
    EXPECT_EQ(x.to_vector<uint8_t>(), ib->x().to_vector<uint8_t>());
    EXPECT_EQ(y.to_vector<int64_t>(), ib->y().to_vector<int64_t>());
    ++ib;
    ++batches;
  }
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(lazy->get(2)[0].to_vector<uint8_t>(), eager->get(2)[0].to_vector<uint8_t>());
  EXPECT_EQ(lazy->get(2)[1].item<int64_t>(), 1);
}

TEST(ImageFolder, ListImageFilesTakesImageExtensionsInAnyCaseSortedByPath) {
  // What ImageFolder reads from a class folder, and `ignis predict` from a directory: by
  // extension alone (the content is not opened), recursively, in byte order of the path.
  Tree t;
  write_text(t.dir.path("b_dog/nested/5.JPEG"), "not decoded when listing");
  write_text(t.dir.path("b_dog/6.gif"), "not an image extension Ignis decodes");
  const std::vector<std::string> want = {
      t.dir.path("a_cat/1.PNG"),
      t.dir.path("a_cat/2.png"),
      t.dir.path("b_dog/nested/3.jpg"),
      t.dir.path("b_dog/nested/5.JPEG"),
      t.dir.path("c_grey/4.png")};
  EXPECT_EQ(list_image_files(t.root()), want);
  EXPECT_EQ(list_image_files(t.dir.path("b_dog")), (std::vector<std::string>{want[2], want[3]}));
}

TEST(ImageFolder, ErrorsNameThePath) {
  TempDir dir;
  EXPECT_THROW_MSG(ImageFolder(dir.path("absent")), IOError, dir.path("absent") + ": expected a directory of class folders, found nothing");
  EXPECT_THROW_MSG(ImageFolder(dir.path("")), IOError, "expected one subfolder per class, found none");
  fs::create_directories(dir.path("cls/empty_inside"));
  fs::create_directories(dir.path("other"));
  write_text(dir.path("other/readme.txt"), "no images here");
  EXPECT_THROW_MSG(ImageFolder(dir.path("")), IOError, "found none in cls, other");
  write_png(dir.path("cls/ok.png"), png(4, 4, 3, [](int y, int x, int k) { return y + x + k; }));
  write_text(dir.path("other/broken.png"), "this is not a png");
  EXPECT_THROW_MSG(ImageFolder(dir.path("")), IOError, dir.path("other/broken.png") + ": expected a PNG");
  ImageFolder lazy(dir.path(""), {.size = 4, .eager = false});  // lazy: fails when read
  EXPECT_EQ(lazy.get(0)[0].sizes(), (Shape{3, 4, 4}));
  EXPECT_THROW_MSG(lazy.get(1), IOError, dir.path("other/broken.png"));
  EXPECT_THROW_MSG(lazy.get_batch({0, 1}), IOError, dir.path("other/broken.png"));
  EXPECT_THROW_MSG(ImageFolder(dir.path(""), {.channels = 2}), ValueError, "channels 1 or 3");
}

}  // namespace
}  // namespace ignis::testing
