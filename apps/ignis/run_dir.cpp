// The run directory (see run_dir.h).
#include "run_dir.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "options.h"

namespace fs = std::filesystem;

namespace ignis_cli {

RunDir::RunDir(std::string path, const nlohmann::json& config) : path_(std::move(path)) {
  const fs::path dir(path_);
  std::error_code ec;
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw UsageError(
        fmt::format("--out {}: exists and is not a directory; choose another --out", path_));
  const fs::path cfg = dir / "config.json";
  if (fs::exists(cfg)) {
    nlohmann::json old;
    std::ifstream in(cfg);
    try {
      in >> old;
    } catch (const std::exception&) {
      old = nullptr;  // unreadable: treat as a different run
    }
    nlohmann::json a = old, b = config;
    if (a.is_object()) a.erase("started_at");
    b.erase("started_at");
    if (a != b)
      throw UsageError(fmt::format(
          "--out {}: the directory already holds a different run (its config.json differs); "
          "choose a new --out or remove that directory",
          path_));
  } else if (fs::exists(dir / "metrics.jsonl") || fs::exists(dir / "model.safetensors")) {
    throw UsageError(fmt::format(
        "--out {}: the directory already holds run files without a config.json; choose a new "
        "--out or remove that directory",
        path_));
  }
  fs::create_directories(dir, ec);
  if (ec)
    throw UsageError(fmt::format(
        "--out {}: cannot create the directory ({}); choose another --out", path_, ec.message()));
  std::ofstream out(cfg);
  out << config.dump(2) << "\n";
  if (!out)
    throw UsageError(
        fmt::format("--out {}: cannot write config.json; choose another --out", path_));
  std::ofstream(dir / "metrics.jsonl", std::ios::trunc);  // a re-run starts a fresh log
}

void RunDir::log(const nlohmann::json& record) const {
  std::ofstream out(file("metrics.jsonl"), std::ios::app);
  out << record.dump() << "\n";
  out.flush();
}

}  // namespace ignis_cli
