// The training checkpoint (see checkpoint.h) and the SIGINT/SIGTERM stop request.
#include "checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "options.h"

namespace ig = ignis;
namespace fs = std::filesystem;
using nlohmann::json;

namespace ignis_cli {
namespace {

constexpr const char* kFormat = "ignis-train-checkpoint 1";

// FNV-1a 64 over the tensors' bytes in key order: cheap, and any flipped byte changes it.
std::string checksum(const ig::nn::StateDict& tensors) {
  std::vector<std::string> keys = tensors.keys();
  std::sort(keys.begin(), keys.end());
  uint64_t h = 14695981039346656037ull;
  for (const auto& k : keys) {
    ig::Tensor c = tensors.at(k).detach().cpu().contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data_ptr());
    for (int64_t i = 0; i < c.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

// Testing only (tests/cli/train_crash.sh): with IGNIS_TEST_CHECKPOINT_PAUSE=FILE the writer,
// once the new checkpoint is complete but before it replaces the old one, creates FILE and
// waits (at most a minute) until FILE is removed — so a test can kill the process at exactly
// the moment a torn checkpoint would be most likely. FILE holds the writer's process id
// (under mpirun the test kills that rank, not the launcher).
void pause_for_test() {
  const char* marker = std::getenv("IGNIS_TEST_CHECKPOINT_PAUSE");
  if (marker == nullptr || *marker == '\0') return;
  std::ofstream(marker) << ::getpid() << "\n";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (fs::exists(marker) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void fsync_directory(const fs::path& file) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

json state_json(const TrainState& s) {
  const ig::Generator& g = ig::default_generator();
  return {
      {"epoch", s.epoch},
      {"step", s.step},
      {"schedule_step", s.schedule_step},
      {"best_accuracy", s.best_accuracy},
      {"best_epoch", s.best_epoch},
      {"history", s.history},
      {"seen", s.seen},
      {"skipped", s.skipped},
      {"rng_seed", g.seed()},
      {"rng_offset", g.offset()}};
}

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) {
  g_stop_signal.store(sig);
  std::signal(sig, SIG_DFL);  // a second Ctrl-C kills at once
}

}  // namespace

void save_checkpoint(
    const std::string& path,
    const TrainState& s,
    const ig::nn::Module& model,
    const ig::optim::Optimizer& optimizer,
    const json& config) {
  ig::nn::StateDict t;
  for (const auto& [k, v] : model.state_dict()) t.insert("model/" + k, v);
  for (const auto& [k, v] : s.best) t.insert("best/" + k, v);
  const ig::optim::OptimizerStateDict osd = optimizer.state_dict();
  for (const auto& [i, st] : osd.state)
    for (const auto& [name, v] : st) t.insert(fmt::format("optimizer/{}/{}", i, name), v);
  json groups = json::array();
  for (const auto& g : osd.param_groups)
    groups.push_back({{"options", g.options}, {"params", g.params}});
  for (const auto& [k, v] : s.grad_scaler) t.insert("grad_scaler/" + k, ig::full({}, v, ig::kFloat64));
  if (s.step > 0 && s.loss_sum.defined()) {
    t.insert("epoch/loss_sum", s.loss_sum);
    t.insert("epoch/correct_sum", s.correct_sum);
  }
  const std::map<std::string, std::string> meta{
      {"format", kFormat},
      {"state", state_json(s).dump()},
      {"optimizer", groups.dump()},
      {"config", config.dump()},
      {"checksum", checksum(t)}};
  const std::string next = path + ".next";
  try {
    ig::save(t, next, meta);
    pause_for_test();
    if (::rename(next.c_str(), path.c_str()) != 0)
      throw ig::IOError(
          fmt::format("cannot rename '{}' to '{}': {}", next, path, std::strerror(errno)));
    fsync_directory(path);
  } catch (const ig::Error& e) {
    throw UsageError(fmt::format(
        "cannot write the checkpoint {} ({}); the previous checkpoint is intact: free some "
        "space and continue with --resume",
        path,
        e.what()));
  }
}

Checkpoint read_checkpoint(const std::string& path, const std::string& run_dir) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw UsageError(fmt::format(
        "--resume {}: no checkpoint.safetensors (the run stopped before its first "
        "checkpoint); start it again without --resume",
        run_dir));
  Checkpoint c;
  try {
    ig::TensorFile f = ig::load_file(path);
    auto meta = [&](const std::string& key) -> const std::string& {
      auto it = f.metadata.find(key);
      if (it == f.metadata.end()) throw std::runtime_error("no '" + key + "' metadata");
      return it->second;
    };
    if (meta("format") != kFormat) throw std::runtime_error("not an ignis train checkpoint");
    if (meta("checksum") != checksum(f.tensors)) throw std::runtime_error("checksum mismatch");
    const json s = json::parse(meta("state"));
    TrainState& st = c.state;
    st.epoch = s.at("epoch");
    st.step = s.at("step");
    st.schedule_step = s.at("schedule_step");
    st.best_accuracy = s.at("best_accuracy");
    st.best_epoch = s.at("best_epoch");
    st.history = s.at("history").get<std::vector<json>>();
    st.seen = s.at("seen");
    st.skipped = s.at("skipped");
    c.rng_seed = s.at("rng_seed");
    c.rng_offset = s.at("rng_offset");
    c.config = json::parse(meta("config"));
    for (const auto& g : json::parse(meta("optimizer")))
      c.optimizer.param_groups.push_back(
          {g.at("options").get<ig::optim::GroupOptions>(),
           g.at("params").get<std::vector<int64_t>>()});
    for (const auto& [key, v] : f.tensors) {
      const auto slash = key.find('/');
      const std::string kind = key.substr(0, slash), rest = key.substr(slash + 1);
      if (kind == "model") {
        c.model.insert(rest, v);
      } else if (kind == "best") {
        st.best.insert(rest, v);
      } else if (kind == "optimizer") {
        const auto s2 = rest.find('/');
        c.optimizer.state[std::stoll(rest.substr(0, s2))][rest.substr(s2 + 1)] = v;
      } else if (kind == "grad_scaler") {
        st.grad_scaler[rest] = v.item<double>();
      } else if (key == "epoch/loss_sum") {
        st.loss_sum = v;
      } else if (key == "epoch/correct_sum") {
        st.correct_sum = v;
      } else {
        throw std::runtime_error("unexpected tensor '" + key + "'");
      }
    }
  } catch (const std::exception& e) {  // ignis::Error, json errors, the checks above
    throw UsageError(fmt::format(
        "--resume {}: checkpoint.safetensors is damaged ({}); it cannot be resumed, start "
        "the run again with another --out",
        run_dir,
        e.what()));
  }
  return c;
}

void remove_checkpoint_leftovers(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string stem = p.filename().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name != stem && name.rfind(stem + ".", 0) == 0) fs::remove(e.path(), ec);
  }
}

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

int stop_signal() { return g_stop_signal.load(); }

}  // namespace ignis_cli
