// Loading and splitting for `ignis train` (see train_data.h).
//
// Default split: the train and test files are pooled and cut 70/10/20 at random from the
// seed, so one number (the seed) fixes the whole experiment, and the validation set used to
// pick the best epoch never overlaps the test set. `--split official` keeps the published
// test file and holds out 10% of the training file for validation.
#include "train_data.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <sstream>

namespace ig = ignis;
namespace fs = std::filesystem;

namespace ignis_cli {
namespace {

ig::data::LabeledImages read_files(const std::string& data, const std::string& dir, bool train) {
  if (data == "fashion-mnist") return ig::data::fashion_mnist(dir, train);
  if (data == "mnist") return ig::data::mnist(dir, train);
  if (data == "cifar10") return ig::data::cifar10(dir, train);
  return ig::data::cifar100(dir, train);
}

// The reader's message names the file and what is wrong with it; add what to do about it.
ig::data::LabeledImages read(const std::string& data, const std::string& dir, bool train) {
  try {
    return read_files(data, dir, train);
  } catch (const ig::IOError& e) {
    throw UsageError(fmt::format(
        "{}; check --data-dir (it must hold the {} files) or "
        "re-download them",
        e.what(),
        data));
  }
}

// Mean and std per channel over the given samples of images [N, C, H, W], on the [0, 1] scale
// the ToFloat transform produces (value / 255). uint8 images are summed exactly in integers;
// float32 ones (CSV features) in double. One pass, done once.
void channel_stats(
    const ig::Tensor& images,
    const std::vector<int64_t>& indices,
    std::vector<double>& mean,
    std::vector<double>& stdev) {
  const int64_t c = images.size(1), plane = images.size(2) * images.size(3);
  const ig::Tensor x = images.contiguous();
  const bool bytes = x.dtype() == ig::kUInt8;
  std::vector<double> sum(size_t(c), 0), sq(size_t(c), 0);
  for (int64_t i : indices) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t at = (i * c + ch) * plane;
      if (bytes) {
        const uint8_t* q = x.data_ptr<uint8_t>() + at;
        uint64_t s = 0, s2 = 0;
        for (int64_t k = 0; k < plane; ++k) s += q[k], s2 += uint64_t(q[k]) * q[k];
        sum[size_t(ch)] += double(s);
        sq[size_t(ch)] += double(s2);
      } else {
        const float* q = x.data_ptr<float>() + at;
        for (int64_t k = 0; k < plane; ++k) sum[size_t(ch)] += q[k], sq[size_t(ch)] += double(q[k]) * q[k];
      }
    }
  }
  const double n = double(indices.size()) * double(plane);
  mean.assign(size_t(c), 0.5);
  stdev.assign(size_t(c), 0.25);
  if (n == 0) return;
  for (size_t ch = 0; ch < size_t(c); ++ch) {
    const double m = sum[ch] / n, sd = std::sqrt(std::max(sq[ch] / n - m * m, 0.0));
    mean[ch] = m / 255.0;
    // A constant channel would divide by zero: keep std >= 1/255 for bytes (possible with a
    // tiny --limit); a constant CSV feature is left unscaled (std 1).
    stdev[ch] = (bytes ? std::max(sd, 1.0) : sd > 0 ? sd : 1.0) / 255.0;
  }
}

bool has_prefix(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// imagefolder:PATH and csv:PATH as a pool of labelled "images" (see train_data.h).
ig::data::LabeledImages read_path_data(const TrainOptions& o, std::string& dir) {
  ig::data::LabeledImages pool;
  const bool csv = has_prefix(o.data, "csv:");
  dir = o.data.substr(o.data.find(':') + 1);
  if (csv) {
    if (o.model != "mlp")
      throw UsageError(fmt::format(
          "--data {} holds rows of numbers, not images: use --model mlp, not --model {}",
          o.data,
          o.model));
    if (o.augment != "none")
      throw UsageError(fmt::format(
          "--augment {} crops and flips images; --data {} holds rows of numbers: use "
          "--augment none",
          o.augment,
          o.data));
    ig::data::CsvData c;
    try {
      c = ig::data::read_csv(dir, ig::data::CsvOptions{});
    } catch (const ig::IOError& e) {
      throw UsageError(fmt::format("{} (ignis train takes the label from the last column)", e.what()));
    }
    pool.images = c.features.reshape({c.features.size(0), c.features.size(1), 1, 1});
    pool.labels = c.labels;
    pool.classes = c.classes;
    return pool;
  }
  if (!fs::is_directory(dir))
    throw UsageError(fmt::format(
        "--data {}: '{}' is not a directory; give a folder with one subfolder of images per "
        "class",
        o.data,
        dir));
  ig::data::ImageFolder folder(dir, {.size = o.image_size});
  pool.images = folder.images();
  pool.labels = folder.labels();
  pool.classes = folder.classes();
  return pool;
}

}  // namespace

std::string default_data_dir(const std::string& data) {
  if (data == "fashion-mnist") return ig::data::kFashionMnistRoot;
  if (data == "mnist") return "/usr/share/datasets/mnist";
  if (data == "cifar10") return "/usr/share/datasets/cifar-10-batches-bin";
  if (data == "cifar100") return "/usr/share/datasets/cifar-100-binary";
  return "";
}

ig::data::LabeledImages first_samples(ig::data::LabeledImages d, int64_t n) {
  if (n > 0 && n < d.images.size(0)) {
    d.images = d.images.narrow(0, 0, n).contiguous();
    d.labels = d.labels.narrow(0, 0, n).contiguous();
  }
  return d;
}

std::string check_data_spec(const std::string& spec) {
  for (const char* name : {"fashion-mnist", "mnist", "cifar10", "cifar100", "synthetic"})
    if (spec == name) return {};
  for (const char* prefix : {"imagefolder:", "csv:"})
    if (has_prefix(spec, prefix))
      return spec.size() > std::string(prefix).size()
                 ? std::string()
                 : fmt::format("'{}' needs a path after the colon ({}PATH)", spec, prefix);
  return fmt::format(
      "{} not in {{fashion-mnist,mnist,cifar10,cifar100,synthetic}} and not "
      "imagefolder:PATH or csv:PATH",
      spec);
}

std::string data_label(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return spec;
  fs::path p = fs::path(spec.substr(colon + 1)).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "dir/" names dir
  return spec.substr(0, colon) + "-" + p.stem().string();
}

std::vector<double> parse_split(const std::string& split) {
  if (split == "official") return {};
  std::vector<double> parts;
  std::stringstream ss(split);
  std::string item;
  const std::string fix =
      "give three fractions train,validation,test that sum to 1 "
      "(e.g. --split 0.7,0.1,0.2) or --split official";
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !(v >= 0 && v <= 1))
      throw UsageError(
          fmt::format("--split '{}': '{}' is not a fraction in [0, 1]; {}", split, item, fix));
    parts.push_back(v);
  }
  if (parts.size() != 3)
    throw UsageError(
        fmt::format("--split '{}': expected 3 parts, got {}; {}", split, parts.size(), fix));
  if (std::abs(parts[0] + parts[1] + parts[2] - 1) > 1e-6)
    throw UsageError(fmt::format(
        "--split '{}': the fractions sum to {:g}, not 1; {}",
        split,
        parts[0] + parts[1] + parts[2],
        fix));
  if (parts[0] == 0 || parts[2] == 0)
    throw UsageError(
        fmt::format("--split '{}': the train and test parts must not be empty; {}", split, fix));
  return parts;
}

TrainData load_train_data(const TrainOptions& o) {
  const std::vector<double> fractions = parse_split(o.split);  // checked before any reading
  TrainData d;
  ig::data::LabeledImages pool, official_test;
  bool official = fractions.empty();
  if (o.data == "synthetic") {
    if (official)
      throw UsageError(
          "--split official: the synthetic data set has no official test set; "
          "use fractions such as --split 0.7,0.1,0.2");
    const int64_t n = o.limit > 0 ? o.limit : 2048;
    auto set = std::make_shared<ig::data::SyntheticDataset>(n, ig::Shape{1, 28, 28}, 10, o.seed);
    pool.images = set->tensors()[0];
    pool.labels = set->tensors()[1];
    for (int k = 0; k < 10; ++k) pool.classes.push_back(fmt::format("class{}", k));
  } else if (o.data.find(':') != std::string::npos) {
    if (official)
      throw UsageError(fmt::format(
          "--split official: --data {} has no official test set; use fractions such as "
          "--split 0.7,0.1,0.2",
          o.data));
    pool = first_samples(read_path_data(o, d.data_dir), o.limit);
  } else {
    d.data_dir = o.data_dir.empty() ? default_data_dir(o.data) : o.data_dir;
    if (!fs::is_directory(d.data_dir))
      throw UsageError(fmt::format(
          "--data {}: data directory '{}' does not exist; pass --data-dir DIR{}",
          o.data,
          d.data_dir,
          o.data == "fashion-mnist" ? " or install Debian's dataset-fashion-mnist package" : ""));
    // --limit takes the first N of the pool (train file first), so a small run reads only
    // what it needs from the training file.
    ig::data::LabeledImages train = first_samples(read(o.data, d.data_dir, true), o.limit);
    if (official) {
      pool = std::move(train);
      official_test = first_samples(read(o.data, d.data_dir, false), o.limit);
    } else if (o.limit > 0 && train.images.size(0) >= o.limit) {
      pool = std::move(train);
    } else {
      ig::data::LabeledImages test =
          first_samples(read(o.data, d.data_dir, false),
                        o.limit > 0 ? o.limit - train.images.size(0) : 0);
      pool = train;
      pool.images = ig::cat({train.images, test.images});
      pool.labels = ig::cat({train.labels, test.labels});
    }
  }
  d.classes = pool.classes;
  d.channels = pool.images.size(1);
  d.height = pool.images.size(2);
  d.width = pool.images.size(3);
  const int64_t n = pool.images.size(0);
  auto all = std::shared_ptr<ig::data::TensorDataset>(ig::data::make_dataset(pool));

  std::vector<std::vector<int64_t>> parts;
  if (official) {
    parts = ig::data::split_indices(n, {0.9, 0.1}, o.seed);
    d.test = ig::data::make_dataset(official_test);
    d.split_note = "official test set; 10% of the training set held out for validation";
  } else {
    parts = ig::data::split_indices(n, fractions, o.seed);
    d.test = std::make_shared<ig::data::Subset>(all, parts[2]);
    d.split_note =
        fmt::format("train and test files pooled, split {} at random (seed {})", o.split, o.seed);
  }
  d.train = std::make_shared<ig::data::Subset>(all, parts[0]);
  d.val = std::make_shared<ig::data::Subset>(all, parts[1]);
  if (d.train->size() == 0 || d.test->size() == 0)
    throw UsageError(fmt::format(
        "--limit {}: too few samples for a train and a test part; "
        "raise --limit",
        o.limit));
  channel_stats(pool.images, parts[0], d.mean, d.std);
  return d;
}

}  // namespace ignis_cli
