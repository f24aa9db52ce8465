// `ignis bench`: training and inference throughput of models on the CPU and on each GPU, in
// one table with the GPU/CPU speed-up, peak memory and achieved TFLOP/s against the device's
// peak. Inputs are random 1x28x28 images in 10 classes (Fashion-MNIST's shape).
//
// Each (device, model, batch size) row runs in a fresh process (this binary re-executed with
// the hidden --row option), so peak memory is that row's alone: the CPU's caching allocator
// would otherwise hand one row's freed blocks to the next and hide its needs. Peak memory is
// the growth of the process's peak resident set (VmHWM, reset through /proc/self/clear_refs)
// over the training steps, above the resident set once the model, optimizer and batch exist:
// gradients, momentum buffers and activations.
#include <fmt/format.h>
#include <ignis/ignis.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_flops.h"
#include "model_setup.h"
#include "options.h"

namespace ig = ignis;
namespace F = ignis::nn::functional;
using Clock = std::chrono::steady_clock;

namespace ignis_cli {
namespace {

constexpr int64_t kChannels = 1, kSize = 28, kClasses = 10;

// A field of /proc/self/status in bytes (its values are in kB); 0 when unreadable.
int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  return 0;
}

// Runs `body` (one step) at least 3 times and for at least `seconds`; `sync` waits for the
// device. Returns samples per second.
template <class Step, class Sync>
double throughput(int64_t batch, double seconds, Step body, Sync sync) {
  for (int i = 0; i < 2; ++i) body();  // warm-up: first-call costs, allocator growth
  sync();
  int64_t steps = 0;
  const auto t0 = Clock::now();
  double dt = 0;
  do {
    body();
    ++steps;
    dt = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (steps < 3 || dt < seconds);
  sync();
  dt = std::chrono::duration<double>(Clock::now() - t0).count();
  return double(steps * batch) / dt;
}

nlohmann::json measure_row(const std::string& spec, double seconds) {
  const auto c1 = spec.find(','), c2 = spec.rfind(',');
  const ig::Device device(spec.substr(0, c1));
  const std::string name = spec.substr(c1 + 1, c2 - c1 - 1);
  const int64_t batch = std::stoll(spec.substr(c2 + 1));
  ig::manual_seed(0);
  auto model = make_model(name, kChannels, kSize, kSize, kClasses);
  model->to(device);
  ig::optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const ig::Tensor x = ig::randn({batch, kChannels, kSize, kSize}, device);
  const ig::Tensor y = ig::randint(0, kClasses, {batch}, device);
  ig::Tensor loss;
  auto train_step = [&] {
    loss = F::cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  nlohmann::json out;
  // Baseline: model, optimizer and batch exist; gradients, momentum buffers and activations
  // (the memory training needs) come after it.
  const int64_t base = status_bytes("VmRSS");
  const bool reset = bool(std::ofstream("/proc/self/clear_refs") << "5");
  out["train"] = throughput(batch, seconds, train_step, [&] { (void)loss.item<double>(); });
  if (device.is_cpu() && reset) out["peak_bytes"] = std::max<int64_t>(0, status_bytes("VmHWM") - base);
  ig::NoGradGuard no_grad;
  model->eval();
  ig::Tensor logits;
  out["infer"] = throughput(
      batch, seconds, [&] { logits = (*model)(x); }, [&] { (void)logits.sum().item<double>(); });
  return out;
}

// Runs this binary with --row and returns the JSON line it prints (or an error record).
nlohmann::json run_row(const std::string& spec, double seconds) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {{"error", "cannot find this executable"}};
  exe[n] = 0;
  int fds[2];
  if (pipe(fds) != 0) return {{"error", "pipe failed"}};
  const std::string secs = fmt::format("{}", seconds);
  const pid_t pid = fork();
  if (pid == 0) {  // the child only execs, which is safe after fork in a threaded process
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(exe, exe, "bench", "--row", spec.c_str(), "--seconds", secs.c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t r; (r = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(r));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  try {
    return nlohmann::json::parse(text.substr(text.rfind('{')));
  } catch (const std::exception&) {
    return {{"error", fmt::format("the measuring process failed (status {})", status)}};
  }
}

std::string cell(const nlohmann::json& row, const char* key, const std::string& format) {
  if (!row.contains(key) || !row[key].is_number()) return "n/a";
  return fmt::format(fmt::runtime(format), row[key].get<double>());
}

}  // namespace

int run_bench(const BenchOptions& o) {
  if (!o.row.empty()) {  // one measurement, in its own process (see the top of this file)
    nlohmann::json out;
    try {
      out = measure_row(o.row, o.seconds);
    } catch (const std::exception& e) {
      out = {{"error", e.what()}};
    }
    fmt::print("{}\n", out.dump());
    return 0;
  }
  for (const auto& m : o.models) forward_macs(m, kChannels, kSize, kClasses);  // validates
  const double peak_seconds = 0.5;
  const double cpu_peak = measure_cpu_peak_flops(peak_seconds);
  fmt::print(
      "cpu fp32 peak {:.3f} TFLOP/s, measured: {} FMA chains on {} OpenMP threads for {} s\n",
      cpu_peak / 1e12, cpu_peak_method(), omp_get_max_threads(), peak_seconds);
  fmt::print("inputs: random 1x28x28 images, 10 classes; each row at least {} s per mode\n", o.seconds);
  fmt::print("forward FLOPs per sample (2 x multiply-adds of the conv and linear layers; a "
             "training step counts 3 x forward):\n");
  for (const auto& m : o.models)
    fmt::print("  {:<8} {}\n", m, int64_t(forward_flops(forward_macs(m, kChannels, kSize, kClasses))));

  std::vector<std::string> devices{"cpu"};
  for (int i = 0; i < ig::cuda::device_count(); ++i) devices.push_back(fmt::format("cuda:{}", i));
  std::map<std::string, nlohmann::json> cpu_rows;
  fmt::print(
      "\n{:<7} {:<8} {:>6} {:>11} {:>11} {:>8} {:>8} {:>10} {:>9} {:>7} {:>9} {:>7}\n",
      "device", "model", "batch", "train/s", "infer/s", "GPU/CPU", "GPU/CPU", "peak mem",
      "train", "", "infer", "");
  fmt::print(
      "{:<7} {:<8} {:>6} {:>11} {:>11} {:>8} {:>8} {:>10} {:>9} {:>7} {:>9} {:>7}\n",
      "", "", "", "samples", "samples", "train", "infer", "MiB", "TFLOP/s", "% peak", "TFLOP/s",
      "% peak");
  std::vector<std::string> errors;
  for (const auto& dev : devices) {
    for (const auto& m : o.models) {
      const double fwd = forward_flops(forward_macs(m, kChannels, kSize, kClasses));
      for (int64_t b : o.batch_sizes) {
        const std::string key = fmt::format("{},{}", m, b);
        nlohmann::json r = run_row(fmt::format("{},{}", dev, key), o.seconds);
        if (r.contains("error")) errors.push_back(fmt::format("{} {} batch {}: {}", dev, m, b, r["error"].get<std::string>()));
        if (dev == "cpu") cpu_rows[key] = r;
        const nlohmann::json& c = cpu_rows[key];
        auto ratio = [&](const char* k) -> nlohmann::json {
          if (dev == "cpu" || !r.contains(k) || !c.contains(k)) return nullptr;
          return r[k].get<double>() / c[k].get<double>();
        };
        nlohmann::json derived = {
            {"speedup_train", ratio("train")},
            {"speedup_infer", ratio("infer")},
            {"mib", r.contains("peak_bytes") ? nlohmann::json(r["peak_bytes"].get<double>() / (1 << 20)) : nlohmann::json()}};
        for (const char* mode : {"train", "infer"}) {
          if (!r.contains(mode)) continue;
          const double flops = r[mode].get<double>() * (mode[0] == 't' ? 3 * fwd : fwd);
          derived[std::string(mode) + "_tflops"] = flops / 1e12;
          if (dev == "cpu") derived[std::string(mode) + "_pct"] = 100 * flops / cpu_peak;
        }
        fmt::print(
            "{:<7} {:<8} {:>6} {:>11} {:>11} {:>8} {:>8} {:>10} {:>9} {:>7} {:>9} {:>7}\n",
            dev, m, b, cell(r, "train", "{:.0f}"), cell(r, "infer", "{:.0f}"),
            dev == "cpu" ? "-" : cell(derived, "speedup_train", "{:.2f}x"),
            dev == "cpu" ? "-" : cell(derived, "speedup_infer", "{:.2f}x"),
            cell(derived, "mib", "{:.1f}"), cell(derived, "train_tflops", "{:.3g}"),
            cell(derived, "train_pct", "{:.3g}"), cell(derived, "infer_tflops", "{:.3g}"),
            cell(derived, "infer_pct", "{:.3g}"));
        std::fflush(stdout);
      }
    }
  }
  if (devices.size() > 1)
    fmt::print("\nGPU rows: peak memory and the fraction of peak FLOP/s are not measured by this "
               "command (bench/gpu_train reports peak memory against PyTorch)\n");
  else
    fmt::print("\nno GPU: {}\n", ig::cuda::is_built() ? "none usable" : "this build has no CUDA backend");
  for (const auto& e : errors) fmt::print("failed: {}\n", e);
  return 0;
}

}  // namespace ignis_cli
