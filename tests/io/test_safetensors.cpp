// safetensors save/load: round trips of every dtype and layout, a model round trip, the exact
// bytes of a small file (computed by hand here, not by the writer), every kind of malformed
// file the reader must refuse (bytes written by the test), and the atomic-write guarantee.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "ignis/io.h"
#include "ignis/models.h"
#include "support/test_support.h"

namespace ignis {
namespace {

namespace fs = std::filesystem;
using testing::Layout;
using testing::make_input;
using testing::values_of;

// A file the reader must refuse, and a piece of the message it must give.
struct BadCase {
  const char* name;
  std::string bytes;
  const char* message;
};

// A fresh directory per test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("ignis_st_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void expect_refused(const std::vector<BadCase>& cases);
  fs::path dir_;
};

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}
std::string u64le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(n >> (8 * i));
  return s;
}
// A file with the given header text (length prefix computed) and data bytes.
std::string st_file(const std::string& header, const std::string& data) {
  return u64le(header.size()) + header + data;
}

// Round trip of every dtype in several shapes, including 0-dim and empty tensors.
TEST_F(SafetensorsTest, RoundTripEveryDtypeAndShape) {
  const DType dtypes[] = {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kUInt8, kBool};
  const Shape shapes[] = {{}, {0}, {2, 0, 3}, {5}, {2, 3, 4}};
  nn::StateDict sd;
  std::vector<std::vector<double>> expected;
  int k = 0;
  for (DType dt : dtypes) {
    for (const Shape& s : shapes) {
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      std::vector<double> v =
          dt == kBool ? testing::random_values(n, 0, 2, k) : testing::random_values(n, 0, 100, k);
      for (double& x : v) x = std::floor(x);  // exact in every dtype
      sd.insert(std::string(dtype_name(dt)) + "_" + std::to_string(k++), make_input(v, s, dt));
      expected.push_back(v);
    }
  }
  save(sd, path("a.safetensors"));
  TensorFile f = load_file(path("a.safetensors"));
  ASSERT_EQ(f.tensors.keys(), sd.keys());  // file order is state-dict order
  size_t i = 0;
  for (const auto& [name, t] : sd) {
    const Tensor& got = f.tensors.at(name);
    EXPECT_EQ(got.dtype(), t.dtype()) << name;
    EXPECT_EQ(got.sizes(), t.sizes()) << name;
    EXPECT_EQ(values_of(got), expected[i++]) << name;
  }
  EXPECT_TRUE(f.metadata.empty());
}

// Non-contiguous inputs (transposed, strided, offset views) are written in row-major order.
TEST_F(SafetensorsTest, NonContiguousInputs) {
  std::vector<double> v = testing::random_values(12, -3, 3, 7);
  nn::StateDict sd;
  for (Layout l : testing::kAllLayouts)
    sd.insert(testing::layout_name(l), make_input(v, {3, 4}, kFloat32, l));
  save(sd, path("nc.safetensors"));
  TensorFile f = load_file(path("nc.safetensors"));
  std::vector<double> want = testing::round_to(v, kFloat32);
  for (Layout l : testing::kAllLayouts) {
    const Tensor& t = f.tensors.at(testing::layout_name(l));
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(values_of(t), want) << testing::layout_name(l);
  }
}

TEST_F(SafetensorsTest, Metadata) {
  std::map<std::string, std::string> meta{{"format", "pt"}, {"note", "h\u00e9llo \"q\""}, {"", ""}};
  save(nn::StateDict{{"x", tensor<float>({1.5f})}}, path("m.safetensors"), meta);
  EXPECT_EQ(load_file(path("m.safetensors")).metadata, meta);
}

// The bytes of a tiny file, worked out by hand: header JSON padded with spaces to a multiple
// of 8, then 1.0f, 2.0f (little-endian IEEE) and a true byte.
TEST_F(SafetensorsTest, ExactBytes) {
  nn::StateDict sd{{"a", tensor<float>({1.0f, 2.0f})}, {"b", scalar_tensor(true)}};
  save(sd, path("t.safetensors"), {{"k", "v"}});
  std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BOOL","shape":[],"data_offsets":[8,9]}})";
  ASSERT_EQ(header.size(), 132u);
  header += std::string(4, ' ');  // 132 -> 136
  std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40\x01", 9);
  std::string want = std::string("\x88\0\0\0\0\0\0\0", 8) + header + data;
  EXPECT_EQ(read_bytes(path("t.safetensors")), want);
}

TEST_F(SafetensorsTest, ResNet18RoundTrip) {
  manual_seed(1);
  models::ResNetConfig cfg;
  cfg.num_classes = 10;
  cfg.stem = models::ResNetStem::Cifar;
  auto a = models::resnet18(cfg);
  Tensor x = randn_like(zeros({2, 3, 32, 32}));
  a->train();
  a->forward(x);  // moves the batch-norm running statistics away from their initial values
  a->eval();
  Tensor ya = a->forward(x);
  save(*a, path("r.safetensors"));
  auto b = models::resnet18(cfg);  // a different random init
  b->eval();
  EXPECT_FALSE(equal(b->forward(x), ya));
  load(*b, path("r.safetensors"));
  EXPECT_TRUE(equal(b->forward(x), ya));
}

// Missing, unexpected and mis-shaped keys are reported together.
TEST_F(SafetensorsTest, LoadIntoModuleReportsAllProblems) {
  nn::Linear lin(3, 2);
  save(nn::StateDict{{"weight", zeros({2, 4})}, {"extra", zeros({1})}}, path("l.safetensors"));
  try {
    load(lin, path("l.safetensors"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bias"), std::string::npos) << m;
    EXPECT_NE(m.find("extra"), std::string::npos) << m;
    EXPECT_NE(m.find("weight"), std::string::npos) << m;
  }
}

// ---- malformed files: each refused with IOError naming the file and the problem ----------

// Writes each case's bytes and checks that load_file refuses them with an IOError whose
// message names the file and contains the case's message.
void SafetensorsTest::expect_refused(const std::vector<BadCase>& cases) {
  for (const BadCase& c : cases) {
    std::string p = path(std::string(c.name) + ".safetensors");
    write_bytes(p, c.bytes);
    try {
      load_file(p);
      ADD_FAILURE() << c.name << ": expected IOError";
    } catch (const IOError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(c.message), std::string::npos) << c.name << ": " << m;
      EXPECT_NE(m.find(p), std::string::npos)
          << c.name << ": message does not name the file: " << m;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << ": expected IOError, got " << e.what();
    }
  }
}

TEST_F(SafetensorsTest, MalformedFilesAreRefused) {
  const std::string ok_entry = R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string d8(8, '\1');
  std::vector<BadCase> cases = {
      {"short", std::string("\x01\x00\x00", 3), "too short"},
      {"len_past_end", u64le(1000) + "{}", "larger than the file"},
      {"len_huge", u64le(uint64_t(1) << 62) + "{}", "exceeds"},
      {"len_over_cap", u64le(100'000'001) + "{}", "exceeds"},
      {"not_json", st_file("{\"x\": ", ""), "not valid JSON"},
      {"not_object", st_file("[1, 2]", ""), "not a JSON object"},
      {"entry_not_object", st_file(R"({"x": 3})", ""), "not an object"},
      {"missing_field",
       st_file(R"({"x":{"dtype":"F32","shape":[2]}})", d8),
       "missing 'data_offsets'"},
      {"unknown_dtype",
       st_file(R"({"x":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", "ab"),
       "unknown dtype"},
      {"negative_dim",
       st_file(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8),
       "negative"},
      {"float_dim",
       st_file(R"({"x":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", d8),
       "non-integer"},
      {"overflow",
       st_file(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", d8),
       "overflows"},
      {"size_mismatch",
       st_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8),
       "needs 12 bytes but data_offsets span 8"},
      {"inverted",
       st_file(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", d8),
       "begin 8 > end 0"},
      {"negative_offset",
       st_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", d8),
       "non-negative"},
      {"out_of_range",
       st_file(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", d8),
       "out of range"},
      {"overlap",
       st_file(
           R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
           R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           d8),
       "overlap"},
      {"gap", st_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8), "gap"},
      {"duplicate", st_file("{" + ok_entry + "," + ok_entry + "}", d8), "duplicate key 'x'"},
      {"trailing", st_file("{" + ok_entry + "}", d8 + "junk"), "4 bytes of trailing garbage"},
      {"bad_bool",
       st_file(R"({"b":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", "\x01\x02"),
       "BOOL byte 1 is 2"},
      {"metadata_not_string", st_file(R"({"__metadata__":{"k":1}})", ""), "not a string"},
  };
  expect_refused(cases);
  EXPECT_THROW_MSG(load_file(path("absent.safetensors")), IOError, "cannot open");
}

// Headers forged to get past size checks or into recursive code; each must be refused before
// anything of the claimed size is allocated (a 2^58-byte claim would otherwise throw
// OutOfMemoryError or crash, not IOError).
TEST_F(SafetensorsTest, HostileHeadersAreRefused) {
  const std::string d8(8, '\1');
  std::vector<BadCase> cases = {
      {"empty_file", "", "file of 0 bytes is too short"},
      {"not_utf8",
       st_file("{\"x\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", "a"),
       "ill-formed UTF-8"},
      {"binary_header", st_file(std::string("\x00\x01{}", 4), ""), "not valid JSON"},
      {"string_header", st_file(R"("F32")", ""), "not a JSON object"},
      // [0, 2^62, 2^62] holds no bytes, but its outer stride 2^124 does not fit int64.
      {"zero_dim_span_overflow",
       st_file(
           R"({"x":{"dtype":"U8","shape":[0,4611686018427387904,4611686018427387904],)"
           R"("data_offsets":[0,0]}})",
           ""),
       "element count of shape [0,4611686018427387904,4611686018427387904] overflows int64"},
      {"claim_past_file",
       st_file(R"({"x":{"dtype":"U8","shape":[288230376151711744],)"
               R"("data_offsets":[0,288230376151711744]}})", d8),
       "data_offsets [0, 288230376151711744] out of range of the 8-byte data buffer"},
      {"offset_above_u64",
       st_file(R"({"x":{"dtype":"U8","shape":[8],"data_offsets":[0,18446744073709551616]}})", d8),
       "non-negative integers"},
      {"nested_shape",
       st_file(R"({"x":{"dtype":"U8","shape":[[8]],"data_offsets":[0,8]}})", d8),
       "nests deeper than the 3 levels"},
      {"deep_nesting", st_file(std::string(100000, '[') + std::string(100000, ']'), ""),
       "nests deeper"},
      // The message quotes at most 80 characters of a forged value, not the whole header.
      {"long_dtype",
       st_file(R"({"x":{"dtype":")" + std::string(5000, 'Q') + R"(","shape":[8],"data_offsets":[0,8]}})", d8),
       "unknown dtype \"QQQQ"},
      {"two_share_bytes",
       st_file(R"({"x":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
               R"("y":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", d8),
       "overlap the previous tensor (which ends at 8)"},
      {"gap_at_end",
       st_file(R"({"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", d8),
       "4 bytes of trailing garbage"},
  };
  expect_refused(cases);
  // The long value is cut: the message stays short however long the forged field is.
  write_bytes(path("long.safetensors"), cases[9].bytes);
  try {
    load_file(path("long.safetensors"));
    ADD_FAILURE() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u) << e.what();
  }
}

// Entries may appear in any order in the header; the tensors come back in data order.
TEST_F(SafetensorsTest, HeaderOrderDoesNotMatterDataOrderDoes) {
  std::string h = R"({"y":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                  R"("x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  write_bytes(path("o.safetensors"), st_file(h, "\x05\x07"));
  TensorFile f = load_file(path("o.safetensors"));
  EXPECT_EQ(f.tensors.keys(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(values_of(f.tensors.at("y")), std::vector<double>{7});
}

// ---- atomic writes: a failed save leaves the old file and no temp file behind ------------

TEST_F(SafetensorsTest, FailedSaveLeavesOldFileUntouched) {
  std::string p = path("w.safetensors");
  save(nn::StateDict{{"x", tensor<float>({1.0f})}}, p);
  const std::string before = read_bytes(p);
  auto only_target_left = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    return names == std::vector<std::string>{"w.safetensors"};
  };
  // A tensor that cannot be serialised, after the temp file was created.
  EXPECT_THROW_MSG(save(nn::StateDict{{"x", ones({3})}, {"u", Tensor()}}, p), IOError, "undefined");
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_TRUE(only_target_left());
  EXPECT_THROW_MSG(save(nn::StateDict{{"__metadata__", ones({1})}}, p), IOError, "reserved");
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_TRUE(only_target_left());
  // A directory that does not exist: nothing can be created.
  EXPECT_THROW_MSG(
      save(nn::StateDict{{"x", ones({1})}}, path("no/such/dir.safetensors")),
      IOError,
      "cannot create");
  // The rename fails (the target is a non-empty directory): the temp file must go.
  fs::create_directories(dir_ / "d.safetensors" / "inner");
  EXPECT_THROW_MSG(
      save(nn::StateDict{{"x", ones({1})}}, path("d.safetensors")), IOError, "cannot rename");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  // A successful save replaces the old file.
  save(nn::StateDict{{"x", tensor<float>({2.0f})}}, p);
  EXPECT_EQ(values_of(load_file(p).tensors.at("x")), std::vector<double>{2.0});
}

// A full disk: write() fails with EFBIG under a file-size limit (SIGXFSZ ignored, as a shell's
// `trap '' XFSZ; ulimit -f` does). The error names the file; the old file stays whole.
TEST_F(SafetensorsTest, FullDiskLeavesOldFileUntouched) {
  const std::string p = path("w.safetensors"), t = path("notes.txt");
  save(nn::StateDict{{"x", tensor<float>({1.0f})}}, p);
  write_file_atomic(t, "old text\n");
  const std::string before = read_bytes(p);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  EXPECT_THROW_MSG(save(nn::StateDict{{"big", ones({4096})}}, p), IOError, "w.safetensors.tmp-");
  EXPECT_THROW_MSG(write_file_atomic(t, std::string(8192, 'x')), IOError, "File too large");
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_EQ(read_bytes(t), "old text\n");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

// Two threads saving to one path at once: each writes its own temp file, both succeed, and
// the file left is one of the two, whole (one shared temp file interleaved them into a file no
// reader could load while one save reported success).
TEST_F(SafetensorsTest, ConcurrentSavesToOnePathLeaveOneWholeFile) {
  const std::string p = path("race.safetensors");
  const nn::StateDict a{{"w", full({1000}, 1.0f)}, {"b", full({7}, 2.0f)}};
  const nn::StateDict b{{"w", full({3000}, 3.0f)}, {"c", full({5}, 4.0f)}, {"d", zeros({9})}};
  for (int round = 0; round < 20; ++round) {
    std::string error_a, error_b;
    std::thread ta([&] {
      try {
        save(a, p);
      } catch (const std::exception& e) {
        error_a = e.what();
      }
    });
    std::thread tb([&] {
      try {
        save(b, p);
      } catch (const std::exception& e) {
        error_b = e.what();
      }
    });
    ta.join();
    tb.join();
    ASSERT_EQ(error_a, "") << round;
    ASSERT_EQ(error_b, "") << round;
    const auto loaded = load_file(p).tensors;
    const nn::StateDict& want = loaded.contains("b") ? a : b;
    ASSERT_EQ(loaded.size(), want.size()) << round;
    for (const auto& [name, t] : want) EXPECT_EQ(values_of(loaded.at(name)), values_of(t)) << name;
  }
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST_F(SafetensorsTest, ANameThatIsNotUtf8IsAnIOErrorNamingThePath) {
  const std::string p = path("bad_name.safetensors");
  save(nn::StateDict{{"x", ones({1})}}, p);
  const std::string before = read_bytes(p);
  EXPECT_THROW_MSG(
      save(nn::StateDict{{"\xff\xfe", zeros({1})}}, p),
      IOError,
      "bad_name.safetensors': a tensor name or metadata value is not valid UTF-8");
  EXPECT_THROW_MSG(
      save(nn::StateDict{{"x", zeros({1})}}, p, {{"note", "\xc3"}}), IOError, "not valid UTF-8");
  EXPECT_EQ(read_bytes(p), before);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST_F(SafetensorsTest, WriteFileAtomicReplacesContent) {
  const std::string t = path("config.json");
  write_file_atomic(t, "{}\n");
  EXPECT_EQ(read_bytes(t), "{}\n");
  write_file_atomic(t, "");
  EXPECT_EQ(read_bytes(t), "");
  EXPECT_THROW_MSG(write_file_atomic(path("no/such/f.txt"), "x"), IOError, "cannot create");
}

}  // namespace
}  // namespace ignis
