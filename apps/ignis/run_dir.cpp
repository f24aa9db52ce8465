// The run directory (see run_dir.h).
#include "run_dir.h"

#include <fmt/format.h>
#include <ignis/io.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "checkpoint.h"
#include "options.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace ignis_cli {

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
}

bool is_run_control_key(const std::string& key) {
  // "ranks": a checkpoint holds the global state, so any number of processes may resume it.
  return key == "started_at" || key == "out" || key == "workers" || key == "detect_anomaly" ||
         key == "checkpoint_every" || key == "ranks";
}

std::string config_difference(const json& saved, const json& given) {
  if (!saved.is_object()) return "config.json is not a JSON object";
  std::map<std::string, std::pair<json, json>> all;
  for (const auto& [k, v] : saved.items()) all[k].first = v;
  for (const auto& [k, v] : given.items()) all[k].second = v;
  for (const auto& [k, ab] : all) {
    if (is_run_control_key(k) || ab.first == ab.second) continue;
    auto text = [](const json& v) { return v.is_null() ? std::string("(absent)") : v.dump(); };
    return fmt::format("{}: {} vs {}", k, text(ab.first), text(ab.second));
  }
  return "";
}

namespace {

// What config.json records about the data that was read, not options: with the same options,
// a difference here means the data set's files changed since the run started.
json without_data_records(json j) {
  if (j.is_object())
    for (const char* k : {"classes", "mean", "std", "train_size", "val_size", "test_size"}) j.erase(k);
  return j;
}

}  // namespace

RunDir::RunDir(std::string path, const json& config, bool resume) : path_(std::move(path)) {
  const fs::path dir(path_);
  std::error_code ec;
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw UsageError(
        fmt::format("--out {}: exists and is not a directory; choose another --out", path_));
  const fs::path cfg = dir / "config.json";
  json old;
  if (fs::exists(cfg)) {
    std::ifstream in(cfg);
    try {
      in >> old;
    } catch (const std::exception&) {
      old = nullptr;  // unreadable: treat as a different run
    }
  }
  if (resume) {
    const std::string diff = config_difference(without_data_records(old), without_data_records(config));
    if (!diff.empty())
      throw UsageError(fmt::format(
          "--resume {}: the options given differ from the run's config.json ({}); drop the "
          "flags that differ, or start a new run with another --out",
          path_,
          diff));
    // Resuming on other data would silently train on another split. The sizes, when they
    // differ, say it best (a file removed or added); else the mean or std (a file changed).
    auto sizes = [](const json& j) {
      json out = json::object();
      for (const char* k : {"train_size", "val_size", "test_size"})
        if (j.is_object() && j.contains(k)) out[k] = j[k];
      return out;
    };
    std::string data_diff = config_difference(sizes(old), sizes(config));
    if (data_diff.empty()) data_diff = config_difference(old, config);
    if (!data_diff.empty()) {
      const std::string dir = config.value("data_dir", "");
      throw UsageError(fmt::format(
          "--resume {}: the data in '{}' is not what the run started with ({}): files were "
          "removed, added or changed since; restore them, or start a new run with another --out",
          path_,
          dir.empty() ? config.value("data", "") : dir,
          data_diff));
    }
    for (const char* f :
         {"config.json", "metrics.jsonl", "model.safetensors", "checkpoint.safetensors"})
      remove_checkpoint_leftovers(file(f));
    return;
  }
  if (fs::exists(cfg)) {
    if (!config_difference(old, config).empty())
      throw UsageError(fmt::format(
          "--out {}: the directory already holds a different run (its config.json differs); "
          "choose a new --out or remove that directory",
          path_));
    if (fs::exists(dir / "checkpoint.safetensors") && !fs::exists(dir / "model.safetensors"))
      throw UsageError(fmt::format(
          "--out {}: the directory holds an interrupted run; continue it with --resume {} or "
          "choose a new --out",
          path_,
          path_));
  } else if (
      fs::exists(dir / "metrics.jsonl") || fs::exists(dir / "model.safetensors") ||
      fs::exists(dir / "checkpoint.safetensors")) {
    throw UsageError(fmt::format(
        "--out {}: the directory already holds run files without a config.json; choose a new "
        "--out or remove that directory",
        path_));
  }
  fs::create_directories(dir, ec);
  if (ec)
    throw UsageError(fmt::format(
        "--out {}: cannot create the directory ({}); choose another --out", path_, ec.message()));
  try {
    // A re-run starts over: the old run's checkpoint must not be resumed into this one.
    fs::remove(dir / "checkpoint.safetensors", ec);
    fs::remove(dir / "model.safetensors", ec);
    ignis::write_file_atomic(file("config.json"), config.dump(2) + "\n");
    write_metrics({});
  } catch (const ignis::Error& e) {
    throw UsageError(fmt::format("--out {}: cannot write the run files ({})", path_, e.what()));
  }
}

void RunDir::write_metrics(const std::vector<json>& records) const {
  std::string text;
  for (const auto& r : records) text += r.dump() + "\n";
  ignis::write_file_atomic(file("metrics.jsonl"), text);
}

}  // namespace ignis_cli
