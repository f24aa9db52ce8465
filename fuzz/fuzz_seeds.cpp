// make_seeds OUT_DIR: writes a small seed corpus per fuzz target into OUT_DIR/<target>/,
// valid files of each format (made by the production writer where there is one), so the
// fuzzers start from inputs that reach deep into each parser. scripts/fuzz.sh runs it; the
// seeds are generated, never committed.
#include <png.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_test_util.h"
#include "data/image_test_util.h"
#include "fuzz_seeds_jpeg.h"
#include "ignis/io.h"
#include "ignis/ops.h"

namespace fs = std::filesystem;
using ignis::testing::idx_bytes;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes read_all(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  Bytes b;
  for (int c; f && (c = std::fgetc(f)) != EOF;) b.push_back(uint8_t(c));
  if (f) std::fclose(f);
  return b;
}

// The fuzz targets whose first byte picks a mode get the mode byte in front.
Bytes with_mode(uint8_t mode, const Bytes& rest) {
  Bytes b{mode};
  b.insert(b.end(), rest.begin(), rest.end());
  return b;
}

void put(const fs::path& dir, int n, const Bytes& b) {
  fs::create_directories(dir);
  ignis::testing::write_bytes((dir / ("seed_" + std::to_string(n))).string(), b);
}

Bytes iota_bytes(size_t n, uint8_t mod) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(i % mod);
  return b;
}

void safetensors_seeds(const fs::path& dir) {
  const std::string tmp = (dir / "tmp.safetensors").string();
  fs::create_directories(dir);
  ignis::nn::StateDict one;
  one.insert("w", ignis::arange(6, ignis::kFloat32).reshape({2, 3}));
  ignis::save(one, tmp);
  put(dir, 0, read_all(tmp));
  ignis::nn::StateDict mixed;
  mixed.insert("a.weight", ignis::arange(4, ignis::kFloat64));
  mixed.insert("a.bias", ignis::arange(3, ignis::kInt64));
  mixed.insert("mask", ignis::gt(ignis::arange(2, ignis::kInt32), 0));
  mixed.insert("half", ignis::arange(2, ignis::kFloat16));
  mixed.insert("empty", ignis::zeros({0, 3}, ignis::kUInt8));
  mixed.insert("scalar", ignis::full({}, 2.5, ignis::kBFloat16));
  ignis::save(mixed, tmp, {{"format", "pt"}});
  put(dir, 1, read_all(tmp));
  fs::remove(tmp);
}

// The PNG kinds of tests/data/test_image.cpp (written by its write_png) and JPEGs of each
// colour space and coding the decoder handles (libjpeg's encoder); mode byte: read_image,
// or ImageFolder::load to 8x8 RGB / 5x5 grey.
void image_seeds(const fs::path& dir) {
  using ignis::testing::PngSpec;
  fs::create_directories(dir);
  const std::string tmp = (dir / "tmp.png").string();
  auto samples = [](size_t n, uint32_t mod) {
    std::vector<uint16_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint16_t((i * 37) % mod);
    return v;
  };
  const std::vector<PngSpec> pngs = {
      {5, 3, PNG_COLOR_TYPE_GRAY, 8, false, samples(15, 256), {}},
      {7, 4, PNG_COLOR_TYPE_GRAY, 1, false, samples(28, 2), {}},
      {6, 5, PNG_COLOR_TYPE_RGB, 8, true, samples(90, 256), {}},
      {4, 4, PNG_COLOR_TYPE_RGB_ALPHA, 16, false, samples(64, 65536), {}},
      {3, 6, PNG_COLOR_TYPE_GRAY_ALPHA, 8, false, samples(36, 256), {}},
      {5, 2, PNG_COLOR_TYPE_PALETTE, 4, false, samples(10, 3), {0, 0, 0, 255, 0, 0, 9, 99, 199}},
  };
  int n = 0;
  const uint8_t modes[3] = {0, 1 + (7 << 2), 1 + 2 + (4 << 2)};
  for (const PngSpec& spec : pngs) {
    ignis::testing::write_png(tmp, spec);
    const Bytes png = read_all(tmp);
    for (uint8_t m : modes) put(dir, n++, with_mode(m, png));
  }
  fs::remove(tmp);
  for (const JpegSpec& spec : jpeg_kinds())
    for (uint8_t m : modes) put(dir, n++, with_mode(m, jpeg_bytes(spec)));
}

// The config files of tests/cli/configs (the good and the refused) and those train_config.sh
// writes, each as JSON (mode 0), TOML (1) or a run's config.json (2).
void config_seeds(const fs::path& dir, const fs::path& source) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(source / "tests/cli/configs")) {
    const std::string ext = e.path().extension().string();
    if (ext == ".json" || ext == ".toml") put(dir, n++, with_mode(ext == ".json" ? 0 : 1, read_all(e.path().string())));
  }
  const std::string json =
      R"({"data": "synthetic", "limit": 256, "epochs": 2, "model": "mlp", "batch-size": 32,)"
      R"( "lr": 0.02, "nesterov": false, "out": "json", "split": "0.7,0.1,0.2"})";
  const std::string toml =
      "data = \"imagefolder:images\"\nlimit = 256\nepochs = 2\nmodel = \"mlp\"\n"
      "batch_size = 32\nlr = 0.02\nnesterov = false\nout = \"toml\"\nimage_size = 16\n";
  // What train.cpp records in a run's config.json (the keys that are not options included).
  const std::string run =
      R"({"model": "mlp", "data": "synthetic", "data_dir": "", "split": "0.7,0.1,0.2",)"
      R"( "epochs": 3, "batch_size": 128, "optimizer": "adamw", "lr": 0.001, "momentum": 0.9,)"
      R"( "nesterov": true, "weight_decay": 0.0005, "schedule": "cosine", "warmup": 0.5,)"
      R"( "label_smoothing": 0.1, "augment": "none", "device": "cpu", "workers": 0, "seed": 7,)"
      R"( "out": "run", "limit": 0, "image_size": 32, "accumulate": 2, "early_stop": 1,)"
      R"( "on_nonfinite": "skip", "detect_anomaly": false, "checkpoint_every": 3,)"
      R"( "classes": ["a", "b"], "mean": [0.5], "std": [0.25], "train_size": 358,)"
      R"( "val_size": 51, "test_size": 103, "parameters": 101770,)"
      R"( "ignis_version": "0.1.0", "started_at": "2026-11-30T04:00:00Z"})";
  put(dir, n++, with_mode(0, Bytes(json.begin(), json.end())));
  put(dir, n++, with_mode(1, Bytes(toml.begin(), toml.end())));
  put(dir, n++, with_mode(2, Bytes(run.begin(), run.end())));
  put(dir, n++, with_mode(2, Bytes(json.begin(), json.end())));
}

// Command lines of the CLI tests (tests/cli/*.sh and the cli.error.* cases of
// tests/CMakeLists.txt), arguments separated by NUL bytes.
void cli_seeds(const fs::path& dir, const fs::path& source) {
  const std::string configs = (source / "tests/cli/configs").string();
  const std::vector<std::vector<std::string>> lines = {
      {"train", "--data", "synthetic", "--limit", "512", "--epochs", "3", "--model", "mlp", "--out", "run"},
      {"train", "--data", "imagefolder:images", "--image-size", "16", "--model", "mlp", "--epochs", "3"},
      {"train", "--data", "csv:flowers.csv", "--epochs", "4", "--out", "run"},
      {"train", "--data", "cifar10", "--data-dir", "cifar", "--model", "mlp", "--limit", "96"},
      {"train", "--data", "synthetic", "--batch-size", "64", "--accumulate", "4", "--split", "0.8,0,0.2"},
      {"train", "--lr", "1e20", "--on-nonfinite", "skip", "--detect-anomaly", "--early-stop", "2"},
      {"train", "--optimizer", "adamw", "--schedule", "cosine", "--warmup", "0.5", "--momentum", "0.8",
       "--no-nesterov", "--weight-decay", "0", "--label-smoothing", "0.1", "--augment", "standard"},
      {"train", "--device", "cuda:1", "--workers", "2", "--seed", "7", "--checkpoint-every", "3",
       "--split", "official", "--data", "mnist"},
      {"train", "--config", configs + "/zero_epochs.json", "--epochs", "1"},
      {"train", "--resume", "run"},
      {"eval", "--run", "run", "--part", "val"},
      {"eval", "--weights", "run/model.safetensors", "--model", "cnn", "--data", "synthetic",
       "--limit", "512", "--batch-size", "64", "--device", "cpu", "--workers", "1", "--image-size", "8"},
      {"bench", "--model", "mlp,cnn", "--batch-sizes", "32,256", "--seconds", "0.5"},
      {"devices"},
      {"train", "--help"},
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    Bytes b;
    for (size_t k = 0; k < lines[i].size(); ++k) {
      if (k) b.push_back(0);
      b.insert(b.end(), lines[i][k].begin(), lines[i][k].end());
    }
    put(dir, int(i), b);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  safetensors_seeds(out / "safetensors");

  const Bytes images = idx_bytes({3, 4, 5}, iota_bytes(60, 255));
  const Bytes labels = idx_bytes({5}, {0, 1, 2, 3, 9});
  put(out / "idx", 0, images);
  put(out / "idx", 1, labels);
  put(out / "idx_gzip", 0, with_mode(0, images));
  put(out / "idx_gzip", 1, with_mode(0, labels));

  const Bytes cifar10 = with_mode(0, [] {
    Bytes b;
    for (uint8_t label : {uint8_t(3), uint8_t(9)}) {
      b.push_back(label);
      Bytes px = iota_bytes(3072, 251);
      b.insert(b.end(), px.begin(), px.end());
    }
    return b;
  }());
  put(out / "cifar", 0, cifar10);
  Bytes cifar100{1, 19, 99};
  Bytes px = iota_bytes(3072, 7);
  cifar100.insert(cifar100.end(), px.begin(), px.end());
  put(out / "cifar", 1, cifar100);

  const std::string with_header = "x1,x2,label\n0.5,-1e3,2\n3,4.25,0\r\n";
  const std::string plain = "1,2,3\n4,5,6\n";
  put(out / "csv", 0, with_mode(3, Bytes(with_header.begin(), with_header.end())));
  put(out / "csv", 1, with_mode(0, Bytes(plain.begin(), plain.end())));

  image_seeds(out / "image");
  config_seeds(out / "config", IGNIS_SOURCE_DIR);
  cli_seeds(out / "cli", IGNIS_SOURCE_DIR);
  return 0;
}
