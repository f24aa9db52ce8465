// Readers of the standard image-classification files: MNIST-family IDX (plain or gzip),
// CIFAR-10 / CIFAR-100 binary batches, and a CSV of numeric features with a label column.
// Each one validates what it reads before trusting it (sizes, magic numbers, counts, label
// ranges) and throws ignis::IOError whose message starts with the reader in brackets, names
// the file, and says what was expected and what was found. Images come back as uint8 [N, C, H, W], labels as int64 [N].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::data {

/// Images, their labels and the class names (index = label).
struct LabeledImages {
  Tensor images;  ///< uint8 [N, C, H, W]
  Tensor labels;  ///< int64 [N]
  std::vector<std::string> classes;
  /// CIFAR-100 only: the 20 superclass labels (int64 [N]) and names.
  Tensor coarse_labels;
  std::vector<std::string> coarse_classes;
};

// ---- IDX (MNIST, Fashion-MNIST, KMNIST ...) ----------------------------------------------
// Magic: two zero bytes, a type byte (0x08 = uint8) and the number of dims; then one big-endian
// uint32 per dim, then the data. gzip files are recognised by content, not by name.
/// An IDX image file (3 dims, uint8) as uint8 [N, 1, rows, cols].
Tensor read_idx_images(const std::string& path);
/// An IDX label file (1 dim, uint8) as int64 [N]; every label must be < num_classes.
Tensor read_idx_labels(const std::string& path, int64_t num_classes = 10);
/// Images + labels of one split, checking that their counts agree.
LabeledImages read_idx_pair(
    const std::string& images_path,
    const std::string& labels_path,
    std::vector<std::string> classes);

/// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistRoot = "/usr/share/datasets/fashion-mnist";
/// Fashion-MNIST from root/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (60,000 / 10,000).
LabeledImages fashion_mnist(const std::string& root = kFashionMnistRoot, bool train = true);
/// MNIST, same file names (the .gz files, or the same names without .gz).
LabeledImages mnist(const std::string& root, bool train = true);

// ---- CIFAR ---------------------------------------------------------------------------------
/// CIFAR-10 from `dir` (cifar-10-batches-bin): data_batch_1..5.bin (train) or test_batch.bin;
/// records of 1 label byte + 3072 pixel bytes (R plane, G plane, B plane, each 32x32
/// row-major). Class names from batches.meta.txt.
LabeledImages cifar10(const std::string& dir, bool train = true);
/// CIFAR-100 from `dir` (cifar-100-binary): train.bin or test.bin; records of coarse label,
/// fine label, 3072 pixel bytes. labels = fine (100 classes), coarse_labels = superclasses
/// (20); names from fine_label_names.txt and coarse_label_names.txt.
LabeledImages cifar100(const std::string& dir, bool train = true);
/// One CIFAR binary file: label_bytes = 1 (CIFAR-10) or 2 (CIFAR-100, coarse then fine).
/// labels[k] holds label byte k of every record; each must be < num_classes[k].
void read_cifar_file(
    const std::string& path,
    int label_bytes,
    const std::vector<int64_t>& num_classes,
    Tensor& images,
    std::vector<Tensor>& labels);

// ---- CSV -----------------------------------------------------------------------------------
// Comma-separated numeric features and one label column. Cells are trimmed of spaces; a cell
// may be double-quoted ("a, b" with "" for a quote). Every feature cell must be a finite
// number in full ("n/a", "", "nan" and "1x" are errors), every row must have the first line's
// column count, blank lines at the end are ignored.
// Labels: when every label cell is a non-negative integer, the integers are the labels; when
// some label cell is not a number, every cell is a class name and the labels are indices
// into the sorted distinct names; numbers that are not non-negative integers (2.5, -1) are an
// error (a regression target, not classes).
// Header: Present, Absent, or Auto, which takes the first line as a header when the label
// column is given by name, or when one of its cells is not a number while the cell below it
// is (so a first row whose only text is a class name is data).
// Errors are IOError "[read_csv] <path>: line L, column C (<name>): expected ..., found ...".
enum class CsvHeader { Auto, Present, Absent };
struct CsvOptions {
  /// A header name, or a 0-based index (negative counts from the end: "-1" = last).
  std::string label_column = "-1";
  CsvHeader header = CsvHeader::Auto;
};
/// Numeric features + one label column.
struct CsvData {
  Tensor features;                         ///< float32 [N, F]
  Tensor labels;                           ///< int64 [N]
  std::vector<std::string> feature_names;  ///< from the header, or "c0", "c1", ...
  /// Class names by label: the sorted names for a column of names; for integer labels
  /// "0" ... "max".
  std::vector<std::string> classes;
};
CsvData read_csv(const std::string& path, const CsvOptions& options);
/// The same with the header given as a flag (true: Present, false: Absent).
CsvData read_csv(
    const std::string& path, const std::string& label_column = "-1", bool has_header = true);

}  // namespace ignis::data
