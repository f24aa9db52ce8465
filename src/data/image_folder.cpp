// ImageFolder (semantics in ignis/data/image_folder.h): the file listing, the per-image
// preparation, and decoding many images in parallel without throwing inside the parallel
// region (each failure is kept and the first, in index order, rethrown after it).
#include "ignis/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <exception>
#include <filesystem>

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/parallel.h"
#include "ignis/data/image.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace fs = std::filesystem;

namespace {

bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

/// uint8 [H, W, c] with c = 1 or 3 -> [H, W, channels].
Tensor convert_channels(const Tensor& hwc, int64_t channels) {
  const int64_t c = hwc.size(2);
  if (c == channels) return hwc;
  const int64_t n = hwc.size(0) * hwc.size(1);
  Tensor out = empty({hwc.size(0), hwc.size(1), channels}, kUInt8);
  const uint8_t* s = hwc.data_ptr<uint8_t>();
  uint8_t* d = out.data_ptr<uint8_t>();
  if (channels == 3) {  // grey -> RGB
    for (int64_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
  } else {  // RGB -> grey, PIL's "L"
    for (int64_t i = 0; i < n; ++i)
      d[i] = uint8_t((s[3 * i] * 19595u + s[3 * i + 1] * 38470u + s[3 * i + 2] * 7471u + 0x8000u) >> 16);
  }
  return out;
}

/// load() of each path into consecutive [C, size, size] slots of out (contiguous).
void load_into(
    const std::vector<std::string>& paths,
    const std::vector<int64_t>& which,
    int64_t size,
    int64_t channels,
    Tensor& out) {
  const int64_t n = int64_t(which.size()), per = channels * size * size;
  uint8_t* dst = out.data_ptr<uint8_t>();
  std::vector<std::exception_ptr> errors(which.size());
  ignis::detail::parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      try {
        const Tensor img = ImageFolder::load(paths[size_t(which[size_t(k)])], size, channels);
        std::memcpy(dst + k * per, img.data_ptr<uint8_t>(), size_t(per));
      } catch (...) {
        errors[size_t(k)] = std::current_exception();
      }
    }
  });
  for (const auto& err : errors)
    if (err) std::rethrow_exception(err);
}

}  // namespace

std::vector<std::string> list_image_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e :
       fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink))
    if (e.is_regular_file() && has_image_extension(e.path())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

Tensor ImageFolder::load(const std::string& path, int64_t size, int64_t channels) {
  const Tensor chw = convert_channels(read_image(path), channels).permute({2, 0, 1});
  if (chw.size(1) == size && chw.size(2) == size) return chw.contiguous();
  return resize_shorter_center_crop(chw, size);
}

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options)
    : options_(options) {
  IGNIS_CHECK(
      options_.size > 0 && (options_.channels == 1 || options_.channels == 3),
      ValueError,
      "[ImageFolder] size must be positive and channels 1 or 3, got size {} and channels {}",
      options_.size,
      options_.channels);
  IGNIS_CHECK(
      fs::is_directory(root),
      IOError,
      "[ImageFolder] {}: expected a directory of class folders, found {}",
      root,
      fs::exists(root) ? "a file" : "nothing (no such directory)");
  for (const auto& e : fs::directory_iterator(root, fs::directory_options::follow_directory_symlink))
    if (e.is_directory()) classes_.push_back(e.path().filename().string());
  std::sort(classes_.begin(), classes_.end());
  IGNIS_CHECK(
      !classes_.empty(),
      IOError,
      "[ImageFolder] {}: expected one subfolder per class, found none",
      root);
  std::vector<int64_t> labels;
  std::vector<std::string> empty_classes;
  for (size_t c = 0; c < classes_.size(); ++c) {
    const auto files = list_image_files((fs::path(root) / classes_[c]).string());
    if (files.empty()) empty_classes.push_back(classes_[c]);
    paths_.insert(paths_.end(), files.begin(), files.end());
    labels.insert(labels.end(), files.size(), int64_t(c));
  }
  IGNIS_CHECK(
      empty_classes.empty(),
      IOError,
      "[ImageFolder] {}: expected .png/.jpg/.jpeg files in every class folder, found none in "
      "{}",
      root,
      fmt::join(empty_classes, ", "));
  labels_ = tensor(labels, std::nullopt, kInt64);
  if (options_.eager) {
    std::vector<int64_t> all(paths_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
    images_ = empty({size(), options_.channels, options_.size, options_.size}, kUInt8);
    load_into(paths_, all, options_.size, options_.channels, images_);
  }
}

Example ImageFolder::get(int64_t i) const {
  IGNIS_CHECK(
      i >= 0 && i < size(), IndexError, "[ImageFolder] index {} out of range for {} images", i, size());
  const Tensor img =
      options_.eager ? images_[i] : load(paths_[size_t(i)], options_.size, options_.channels);
  return {img, labels_[i]};
}

Example ImageFolder::get_batch(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices)
    IGNIS_CHECK(
        i >= 0 && i < size(), IndexError, "[ImageFolder] index {} out of range for {} images", i, size());
  const Tensor idx = tensor(indices, std::nullopt, kInt64);
  if (options_.eager) return {index_select(images_, 0, idx), index_select(labels_, 0, idx)};
  Tensor out = empty({int64_t(indices.size()), options_.channels, options_.size, options_.size}, kUInt8);
  load_into(paths_, indices, options_.size, options_.channels, out);
  return {out, index_select(labels_, 0, idx)};
}

}  // namespace ignis::data
