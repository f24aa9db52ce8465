// make_seeds OUT_DIR: writes a small seed corpus per fuzz target into OUT_DIR/<target>/,
// valid files of each format (made by the production writer where there is one), so the
// fuzzers start from inputs that reach deep into each parser. scripts/fuzz.sh runs it; the
// seeds are generated, never committed.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_test_util.h"
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
  return 0;
}
