// The flat-TOML reader of `ignis train --config FILE.toml` against values TOML 1.0 defines
// (the accepted document and a sample of the refusals were checked against Python's tomllib
// when written), and each refusal with its line: the TOML it does not accept and the valid
// TOML that is not a set of options.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "toml_options.h"

namespace ignis_cli {
namespace {

using nlohmann::json;

TEST(TomlOptions, ValuesOfEveryKind) {
  const json j = parse_toml_options(
      "# a comment line\n"
      "\n"
      "model = \"resnet18\"   # trailing comment\n"
      "out = 'C:\\runs\\a'\n"
      "name = \"tab\\there \\\"q\\\" \\\\ \\u00e9 \\U0001F600\"\n"
      "path = \"r\xc3\xa9sultats/\xe4\xb8\x80\"\n"
      "\"quoted key\" = 1\n"
      "'literal key' = 2\n"
      "epochs = +12\n"
      "neg = -0\n"
      "big = 9_223_372_036_854_775_807\n"
      "hex = 0xDEAD_beef\n"
      "oct = 0o755\n"
      "bin = 0b1101\n"
      "lr = 1e-3\n"
      "momentum = 0.9\n"
      "f3 = -1_000.5E+2\n"
      "inf_pos = inf\n"
      "inf_neg = -inf\n"
      "not_a_number = nan\n"
      "nesterov = true\r\n"
      "augment\t=\tfalse");
  EXPECT_EQ(j.at("model"), "resnet18");
  EXPECT_EQ(j.at("out"), "C:\\runs\\a");
  EXPECT_EQ(j.at("name"), "tab\there \"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(j.at("path"), "r\xc3\xa9sultats/\xe4\xb8\x80");
  EXPECT_EQ(j.at("quoted key"), 1);
  EXPECT_EQ(j.at("literal key"), 2);
  EXPECT_TRUE(j.at("epochs").is_number_integer());
  EXPECT_EQ(j.at("epochs").get<int64_t>(), 12);
  EXPECT_EQ(j.at("neg").get<int64_t>(), 0);
  EXPECT_EQ(j.at("big").get<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(j.at("hex").get<int64_t>(), 0xDEADBEEF);
  EXPECT_EQ(j.at("oct").get<int64_t>(), 0755);
  EXPECT_EQ(j.at("bin").get<int64_t>(), 13);
  EXPECT_TRUE(j.at("lr").is_number_float());
  EXPECT_EQ(j.at("lr").get<double>(), 1e-3);
  EXPECT_EQ(j.at("momentum").get<double>(), 0.9);
  EXPECT_EQ(j.at("f3").get<double>(), -1000.5e2);
  EXPECT_EQ(j.at("inf_pos").get<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(j.at("inf_neg").get<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(j.at("not_a_number").get<double>()));
  EXPECT_EQ(j.at("nesterov"), true);
  EXPECT_EQ(j.at("augment"), false);
  EXPECT_EQ(j.size(), 20u);
}

TEST(TomlOptions, EmptyDocumentsAreEmptyObjects) {
  EXPECT_EQ(parse_toml_options(""), json::object());
  EXPECT_EQ(parse_toml_options("\n# only a comment\n   \r\n"), json::object());
}

/// The line and message start a document is refused with.
void expect_refused(const std::string& doc, int line, const std::string& start) {
  SCOPED_TRACE(::testing::Message() << "document: " << ::testing::PrintToString(doc));
  try {
    parse_toml_options(doc);
    ADD_FAILURE() << "accepted";
  } catch (const TomlError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(start, 0), 0u) << e.what();
  }
}

TEST(TomlOptions, RefusesWhatIsNotAnOption) {
  expect_refused("a = 1\n[data]\nname = 'x'\n", 2, "a table header");
  expect_refused("[##", 1, "a table header");
  expect_refused("  [[runs]]\n", 1, "a table header");
  expect_refused("data.name = 'x'", 1, "the dotted key 'data.");
  expect_refused("epochs = [1, 2]", 1, "the value of 'epochs' is an array");
  expect_refused("opt = { lr = 1 }", 1, "the value of 'opt' is an inline table");
  expect_refused("when = 1979-05-27", 1, "the value of 'when' is a date or time");
  expect_refused("when = 07:32:00", 1, "the value of 'when' is a date or time");
  expect_refused("out = \"\"\"\nx\"\"\"", 1, "the value of 'out' is a multi-line string");
  expect_refused("out = '''x'''", 1, "the value of 'out' is a multi-line string");
}

TEST(TomlOptions, RefusesInvalidToml) {
  expect_refused(
      "model = 'mlp'\nepochs = \n", 2, "not valid TOML: expected a value after 'epochs ='");
  expect_refused("epochs 3", 1, "not valid TOML: expected '=' after the key 'epochs', found '3'");
  // The inputs that took Debian's toml++ 3.3 to undefined behaviour (fuzz_config).
  expect_refused(
      "model = \"mlp\"\ndevice\xd0\x87 = \"cpu\"\n",
      2,
      "not valid TOML: expected '=' after the key 'device', found U+0407");
  expect_refused(
      "model = \"mlp\"\ndat\xef\xbb\x9f"
      "a = 1\n",
      2,
      "not valid TOML: expected '=' after the key 'dat', found U+FEDF");
  expect_refused("= 3", 1, "not valid TOML: expected a key");
  expect_refused("a = 1\na = 2", 2, "not valid TOML: the key 'a' is given twice");
  expect_refused("a = 1 2", 1, "not valid TOML: unexpected text after the value of 'a'");
  expect_refused("a = 'x' # ok\nb = \"open", 2, "not valid TOML: a string is not closed");
  expect_refused("a = \"\\q\"", 1, "not valid TOML: the escape");
  expect_refused("a = \"\\u12\"", 1, "not valid TOML: \\u must be followed by 4");
  expect_refused("a = \"\\uD800\"", 1, "not valid TOML: \\u must be followed by 4");
  expect_refused("a = \"x\x01y\"", 1, "not valid TOML: the control character U+0001");
  expect_refused("a = 1 # bell\x07\n", 1, "not valid TOML: the control character U+0007");
  expect_refused("a = 012", 1, "not valid TOML: '012' (the value of 'a') is not a number: leading");
  expect_refused("a = 1__0", 1, "not valid TOML: '1__0' (the value of 'a') is not a number: '_'");
  expect_refused("a = _1", 1, "not valid TOML: '_1' (the value of 'a') is not a number");
  expect_refused("a = 1.", 1, "not valid TOML: '1.' (the value of 'a') is not a number: a digit");
  expect_refused(
      "a = 1e", 1, "not valid TOML: '1e' (the value of 'a') is not a number: the exponent");
  expect_refused(
      "a = 9223372036854775808",
      1,
      "not valid TOML: '9223372036854775808' (the value of 'a') is not a number: out of the range");
  expect_refused(
      "a = -0x1", 1, "not valid TOML: '-0x1' (the value of 'a') is not a number: a hexadecimal");
  expect_refused(
      "a = 0b102",
      1,
      "not valid TOML: '0b102' (the value of 'a') is not a number: a digit outside");
  expect_refused("a = yes", 1, "not valid TOML: 'yes' (the value of 'a') is not a number");
  expect_refused("a = 1\rb = 2", 1, "not valid TOML");
}

TEST(TomlOptions, RefusesInvalidUtf8WithItsLine) {
  expect_refused("a = 1\nb = '\xc0\xaf'\n", 2, "not valid UTF-8");        // overlong '/'
  expect_refused("a = 1\n\nb = '\xed\xa0\x80'\n", 3, "not valid UTF-8");  // a surrogate
  expect_refused("b = '\xe4\xb8'", 1, "not valid UTF-8");                 // truncated
  expect_refused("b = '\xf4\x90\x80\x80'", 1, "not valid UTF-8");         // past U+10FFFF
}

}  // namespace
}  // namespace ignis_cli
