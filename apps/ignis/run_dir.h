// The run directory of `ignis train`: config.json (every resolved option), metrics.jsonl
// (one JSON object per line: each epoch, then the final test evaluation), model.safetensors
// and checkpoint.safetensors (checkpoint.h). Every file is replaced atomically (a complete
// temporary file renamed over it), so a crash never leaves a torn one. A directory that
// already holds a different run, or an interrupted one, is never overwritten.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ignis_cli {

/// Options that change how a run is carried out but not its result; a resumed run may
/// change them (and config.json comparisons ignore them).
bool is_run_control_key(const std::string& key);

/// The first key (in key order) whose value differs between two configs, ignoring run-control
/// keys, as "key: a vs b"; "" when they agree.
std::string config_difference(const nlohmann::json& saved, const nlohmann::json& given);

/// The path of a run directory's file (e.g. kCheckpointFile), for code that knows the directory
/// but holds no RunDir (the ranks other than 0, the out-of-memory report).
inline std::string run_file(const std::string& dir, const std::string& name) {
  return dir + "/" + name;
}
inline constexpr const char* kCheckpointFile = "checkpoint.safetensors";

/// The local time as YYYYMMDD-HHMMSS, for default run directory names and config.json.
std::string timestamp();

class RunDir {
 public:
  /// A fresh run: creates `path` (and parents) and writes config.json and an empty
  /// metrics.jsonl. When the directory already holds a run whose config differs, or an
  /// interrupted run (a checkpoint but no model), throws UsageError; the same finished run
  /// again (a re-run) starts over.
  /// With `resume`: the directory must hold this run (same config), and is kept as it is.
  RunDir(std::string path, const nlohmann::json& config, bool resume);
  /// Replaces metrics.jsonl with these records, one per line.
  void write_metrics(const std::vector<nlohmann::json>& records) const;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return run_file(path_, name); }

 private:
  std::string path_;
};

}  // namespace ignis_cli
