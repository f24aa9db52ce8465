// Options from a config file (see config_file.h). Each key becomes the arguments its flag
// would have had ("epochs": 3 -> --epochs 3, "nesterov": false -> --no-nesterov), parsed by a
// scratch CLI::App bound to the same TrainOptions: the file gets exactly the checks the
// command line gets, and a new flag needs no change here.
#include "config_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "toml_options.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace ignis_cli {
namespace {

// config.json records these for the reader; they describe the run, they are not options.
const std::set<std::string> kRecordedOnly = {
    "classes",
    "mean",
    "std",
    "train-size",
    "val-size",
    "test-size",
    "parameters",
    "ranks",
    "ignis-version",
    "started-at"};
// What a `--preset` run's config.json records of the recipe it fixed: read back with the
// preset, these are not options to apply.
const std::set<std::string> kPresetRecorded = {"model", "data", "split", "train-samples",
                                               "test-samples"};

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  throw UsageError(fmt::format("--config {}: {}", path, what));
}

json read_config(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    bad_file(path, "cannot read the file (it does not exist or is not a file); check the path");
  const std::string ext = fs::path(path).extension().string();
  json j;
  if (ext == ".json") {
    std::ifstream in(path);
    if (!in) bad_file(path, "cannot open the file for reading; check its permissions");
    try {
      j = json::parse(in);
    } catch (const json::parse_error& e) {
      bad_file(path, fmt::format("not valid JSON (byte {}); fix the file", e.byte));
    }
  } else if (ext == ".toml") {
    std::ifstream in(path, std::ios::binary);
    if (!in) bad_file(path, "cannot open the file for reading; check its permissions");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    try {
      j = parse_toml_options(text);
    } catch (const TomlError& e) {
      bad_file(path, fmt::format("line {}: {}; fix the file", e.line(), e.what()));
    }
  } else {
    bad_file(path, "unknown file type; use a .json or .toml file");
  }
  if (!j.is_object()) bad_file(path, "expected an object of option names and values");
  return j;
}

// The arguments the value of `key` stands for, or a UsageError for a value of the wrong type.
// `key` is the option's name (underscores made dashes), `raw` the file's spelling.
std::vector<std::string> arguments(
    const std::string& path,
    const std::string& raw,
    const std::string& key,
    const CLI::Option& opt,
    const json& v) {
  const std::string flag = "--" + key;
  if (opt.get_expected_min() == 0) {  // a flag: true/false only
    if (!v.is_boolean())
      bad_file(path, fmt::format("key '{}': expected true or false, not {}", raw, v.dump()));
    if (v.get<bool>()) return {flag};
    if (opt.check_lname("no-" + key)) return {"--no-" + key};
    return {};  // flags without a negation are off by default
  }
  if (v.is_string()) return {flag, v.get<std::string>()};
  if (v.is_number()) return {flag, v.dump()};  // dump() prints doubles so they read back exactly
  bad_file(path, fmt::format("key '{}': expected a number or a string, not {}", raw, v.dump()));
}

void apply_file(
    const std::string& path,
    const CLI::App& train,
    TrainOptions& o,
    AddTrainOptions add,
    const std::set<std::string>& skip) {
  const json j = read_config(path);
  const bool preset_run = j.contains("preset");
  for (const auto& [raw, value] : j.items()) {
    std::string key = raw;
    for (char& c : key)
      if (c == '_') c = '-';
    if (kRecordedOnly.count(key) || skip.count(key)) continue;
    if (preset_run && kPresetRecorded.count(key)) continue;
    const CLI::Option* opt = key == "config" || key == "resume" || key == "help"
                                 ? nullptr
                                 : train.get_option_no_throw("--" + key);
    if (opt == nullptr)
      bad_file(
          path,
          fmt::format(
              "unknown key '{}'; the keys are the long options of 'ignis train' "
              "(see ignis train --help)",
              raw));
    if (opt->count() > 0) continue;  // given on the command line: that wins
    // config.json records an unset --limit as 0 (all samples), which --limit itself refuses.
    if (key == "limit" && value.is_number() && value == 0) continue;
    const std::vector<std::string> args = arguments(path, raw, key, *opt, value);
    if (args.empty()) continue;
    CLI::App scratch;
    add(scratch, o);
    std::vector<const char*> argv{"ignis-train"};
    for (const auto& a : args) argv.push_back(a.c_str());
    try {
      scratch.parse(int(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      bad_file(path, fmt::format("key '{}': {}; fix the file", raw, e.what()));
    }
  }
}

}  // namespace

void apply_config_sources(const CLI::App& train, TrainOptions& o, AddTrainOptions add) {
  if (!o.config.empty() && !o.resume.empty())
    throw UsageError(
        "--config and --resume: use one; a resumed run takes its options from its config.json");
  if (!o.config.empty()) apply_file(o.config, train, o, add, {});
  if (o.resume.empty()) return;
  const std::string cfg = (fs::path(o.resume) / "config.json").string();
  std::error_code ec;
  if (!fs::is_regular_file(cfg, ec))
    throw UsageError(fmt::format(
        "--resume {}: no config.json there, so it is not a run directory of 'ignis train'; "
        "check the path",
        o.resume));
  if (!o.out.empty() && fs::path(o.out).lexically_normal() != fs::path(o.resume).lexically_normal())
    throw UsageError(fmt::format(
        "--resume {} with --out {}: a resumed run stays in its directory; drop --out",
        o.resume,
        o.out));
  // "out" is where the run was started from; the directory may have moved since.
  apply_file(cfg, train, o, add, {"out"});
  o.out = o.resume;
}

}  // namespace ignis_cli
