// The run directory of `ignis train`: config.json (every resolved option), metrics.jsonl
// (one JSON object per line: each epoch, then the final test evaluation) and
// model.safetensors. A directory that already holds a different run is never overwritten.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ignis_cli {

class RunDir {
 public:
  /// Creates `path` (and parents) and writes config.json. When the directory already holds a
  /// run whose config differs (ignoring "started_at"), throws UsageError; the same config
  /// again (a re-run) starts a fresh metrics.jsonl.
  RunDir(std::string path, const nlohmann::json& config);
  /// Appends one line to metrics.jsonl and flushes it, so a killed run keeps its epochs.
  void log(const nlohmann::json& record) const;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace ignis_cli
