// ImageFolder: a directory tree of images, one subfolder per class, as torchvision's
// ImageFolder:
//   root/cat/001.png, root/cat/x/002.jpg, root/dog/003.jpeg ...
// Classes are the subfolders' names sorted (byte order), their positions the labels; each
// class's files are found recursively (following symlinks), kept when their extension is
// .png, .jpg or .jpeg (any case), and sorted by path. The format itself is read from the
// file's bytes (read_image), so a misnamed file still decodes.
//
// Every image becomes uint8 [channels, size, size]: grey is repeated to RGB (channels = 3)
// or RGB turned into grey with PIL's L = (19595 R + 38470 G + 7471 B + 2^15) >> 16
// (channels = 1); then torchvision's Resize(size) (shorter side to size, bilinear,
// antialias=False) and CenterCrop(size). Images already size x size are only copied.
//
// Eager (the default) decodes every image once, in parallel over the library's threads
// (set_num_threads), into one [N, C, size, size] tensor, so batches are a single gather and
// a loader keeps up at any speed the batch transforms allow; it costs N * C * size^2 bytes
// (50,000 images at 32x32: 150 MB). Lazy decodes in get()/get_batch(), in the loader's
// workers, for sets too large to hold decoded.
//
// Errors (IOError naming the path): root missing or holding no class folders, a class folder
// without images, an image that does not decode (eager: at construction; lazy: in the batch
// that reads it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/data/dataset.h"

namespace ignis::data {

struct ImageFolderOptions {
  int64_t size = 32;     ///< side of the square images produced
  int64_t channels = 3;  ///< 3 (RGB) or 1 (grey)
  bool eager = true;     ///< decode everything at construction (see above)
};

/// Every file under dir whose extension is .png, .jpg or .jpeg (any case), found recursively
/// (following symlinks) and sorted by path: the images ImageFolder reads from a class folder.
std::vector<std::string> list_image_files(const std::string& dir);

class ImageFolder : public Dataset {
 public:
  explicit ImageFolder(const std::string& root, ImageFolderOptions options = {});
  int64_t size() const override { return int64_t(paths_.size()); }
  /// {image uint8 [C, size, size], label int64 []}.
  Example get(int64_t i) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;

  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<std::string>& paths() const { return paths_; }
  /// int64 [N], the class index of each path.
  const Tensor& labels() const { return labels_; }
  /// Eager only: all images, uint8 [N, C, size, size] (undefined when lazy).
  const Tensor& images() const { return images_; }
  const ImageFolderOptions& options() const { return options_; }

  /// One file as ImageFolder prepares it: uint8 [channels, size, size].
  static Tensor load(const std::string& path, int64_t size, int64_t channels);

 private:
  ImageFolderOptions options_;
  std::vector<std::string> classes_, paths_;
  Tensor labels_, images_;
};

}  // namespace ignis::data
