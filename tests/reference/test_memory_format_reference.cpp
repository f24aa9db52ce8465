// Memory formats against PyTorch 1.13: make_memory_format_cases.py (a CTest fixture) records,
// for 4-D shapes with size-1 and size-0 dims and several layouts, the strides PyTorch gives
// and its answers to is_contiguous(format), to(memory_format), contiguous(memory_format),
// clone and empty_like (preserve), and empty(memory_format=channels_last). Ignis builds the
// same layouts and must answer the same. The file is named by IGNIS_MEMORY_FORMAT_CASES.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "core/shape.h"
#include "support/test_support.h"

namespace ignis {
namespace {

using json = nlohmann::json;

const json& cases() {
  static const json file = [] {
    const char* path = std::getenv("IGNIS_MEMORY_FORMAT_CASES");
    if (!path) throw ValueError("IGNIS_MEMORY_FORMAT_CASES is not set");
    std::ifstream in(path);
    if (!in) throw IOError(std::string("cannot read ") + path);
    return json::parse(in);
  }();
  return file;
}

/// The layouts of make_memory_format_cases.py, built the same way.
const std::map<std::string, std::function<Tensor(const Tensor&)>>& layouts() {
  static const std::map<std::string, std::function<Tensor(const Tensor&)>> m{
      {"contiguous", [](const Tensor& x) { return x; }},
      {"channels_last", [](const Tensor& x) { return x.contiguous(MemoryFormat::channels_last); }},
      {"nhwc_permuted",
       [](const Tensor& x) { return x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }},
      {"transposed_hw", [](const Tensor& x) { return x.transpose(2, 3).contiguous().transpose(2, 3); }},
      {"channels_last_every_other_w",
       [](const Tensor& x) {
         return cat({x, x}, 3).contiguous(MemoryFormat::channels_last).slice(3, 0, std::nullopt, 2);
       }},
      {"contiguous_every_other_w",
       [](const Tensor& x) { return cat({x, x}, 3).slice(3, 0, std::nullopt, 2); }},
  };
  return m;
}

Shape shape_of(const json& j) { return j.get<Shape>(); }

/// Strides and identity of a result against PyTorch's record of it.
void expect_result(const json& want, const Tensor& got, const Tensor& x, const std::string& what) {
  EXPECT_EQ(got.strides(), shape_of(want["strides"])) << what;
  EXPECT_EQ(got.impl() == x.impl(), want["same"].get<bool>()) << what << ": returned the input itself";
}

TEST(MemoryFormatReference, EveryCaseAnswersAsPyTorch) {
  const json& all = cases()["cases"];
  ASSERT_GE(all.size(), 60u) << "make_memory_format_cases.py lost cases";
  for (const json& c : all) {
    const Shape shape = shape_of(c["shape"]);
    const std::string tag = detail::shape_str(shape) + " " + c["layout"].get<std::string>();
    SCOPED_TRACE(tag);
    const Tensor x = layouts().at(c["layout"])(zeros(shape));
    ASSERT_EQ(x.strides(), shape_of(c["strides"])) << "the input layout differs from PyTorch's";
    EXPECT_EQ(x.is_contiguous(), c["is_contiguous"].get<bool>());
    EXPECT_EQ(x.is_contiguous(MemoryFormat::channels_last),
              c["is_contiguous_channels_last"].get<bool>());
    expect_result(c["to_channels_last"], x.to(MemoryFormat::channels_last), x, "to(channels_last)");
    expect_result(c["to_contiguous"], x.to(MemoryFormat::contiguous), x, "to(contiguous)");
    expect_result(c["contiguous_channels_last"], x.contiguous(MemoryFormat::channels_last), x,
                  "contiguous(channels_last)");
    expect_result(c["contiguous"], x.contiguous(), x, "contiguous()");
    expect_result(c["clone"], x.clone(), x, "clone()");
    expect_result(c["empty_like"], empty_like(x), x, "empty_like");
    EXPECT_EQ(empty(shape, MemoryFormat::channels_last).strides(),
              shape_of(c["empty_channels_last"]));
  }
}

}  // namespace
}  // namespace ignis
