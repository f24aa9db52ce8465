// Training (and inference) throughput of Ignis's ready-made models on the CPU, one JSON line
// per row, for side-by-side comparison with bench/train_models.py by bench/compare_train.sh.
//
// Rows (a training step = forward, cross-entropy, zero_grad, backward, SGD(lr 0.01, momentum
// 0.9) step; inputs and labels are random, generated once):
//   mlp              models::MLP 10 -> 512 -> 10, batch 64
//   small_cnn        models::SmallCNN on [128, 1, 28, 28]
//   resnet18_b32     ResNet-18 (CIFAR stem, 10 classes) on [32, 3, 32, 32]
//   resnet18_b128    the same on [128, 3, 32, 32]
//   resnet18_b128_bf16  the same under amp::autocast(kBFloat16) (convolutions and the linear
//                    layer in bfloat16, the loss and batch-norm statistics in float32)
//   resnet18_infer   ResNet-18 forward in eval mode under NoGradGuard, batch 128
//   gemm             matmul 1024^3, the practical fp32 peak the GFLOP/s are set against
// Each row: warm-up, then repeat until --min-time seconds and 5 repetitions have passed (the
// ResNet rows: 1 warm-up step and --resnet-steps timed steps); the time is the median step.
// FLOPs: forward = sum over conv/linear of 2 * MACs, training step = 3 * forward.
// peak_rss_mb is the process's VmHWM after the row, so it is the row's peak memory only when
// the row runs alone (--only row), as compare_train.sh does; base_rss_mb is VmRSS at start.
//
// --channels-last lays out the conv models (weights and input batches) channels-last.
//
// Usage: train_models [--threads N] [--min-time S] [--resnet-steps N] [--only row,row,...]
//                     [--channels-last]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "ignis/ignis.h"
#include "ignis/models.h"

namespace {
using ignis::bench::time_median;

namespace ig = ignis;
namespace F = ignis::nn::functional;

struct Options {
  int threads = 1;
  double min_time = 1.0;
  int resnet_steps = 3;
  bool channels_last = false;
  std::vector<std::string> only;  // empty: all rows
};

/// A field of /proc/self/status in MB (VmHWM, VmRSS); 0 if it cannot be read.
double proc_status_mb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) return std::atof(line.c_str() + key.size() + 1) / 1024.0;
  return 0;
}

double g_base_rss = 0;

void report(const Options& o, const char* row, const char* shape, double sec, double samples,
            double flops) {
  std::printf(
      "{\"engine\":\"ignis\",\"row\":\"%s\",\"shape\":\"%s\",\"threads\":%d,\"seconds\":%.6g,"
      "\"steps_per_s\":%.6g,\"samples_per_s\":%.6g,\"gflops\":%.4g,\"peak_rss_mb\":%.1f,"
      "\"base_rss_mb\":%.1f,\"channels_last\":%s}\n",
      row, shape, o.threads, sec, 1 / sec, samples / sec, flops / sec / 1e9,
      proc_status_mb("VmHWM"), g_base_rss, o.channels_last ? "true" : "false");
  std::fflush(stdout);
}

bool wanted(const Options& o, const std::string& row) {
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), row) != o.only.end();
}

// ---- FLOP counts (2 * MACs of every conv and linear, forward, per sample) ------------------
double conv_flops(double cin, double cout, double k, double out_hw) {
  return 2 * cin * cout * k * k * out_hw * out_hw;
}
double mlp_flops() { return 2 * (10.0 * 512 + 512.0 * 10); }
double small_cnn_flops() {
  return conv_flops(1, 32, 3, 28) + conv_flops(32, 64, 3, 14) + 2 * (64.0 * 7 * 7 * 128 + 128 * 10);
}
double resnet18_cifar_flops() {
  double f = conv_flops(3, 64, 3, 32);  // stem
  double cin = 64, hw = 32;
  for (double planes : {64.0, 128.0, 256.0, 512.0}) {
    const bool down = planes != 64;
    if (down) hw /= 2;
    f += conv_flops(cin, planes, 3, hw) + 3 * conv_flops(planes, planes, 3, hw);  // 2 blocks
    if (down) f += conv_flops(cin, planes, 1, hw);                               // shortcut
    cin = planes;
  }
  return f + 2 * 512.0 * 10;
}

/// One training step of `model` on (x, y) with `opt`; with `bf16`, forward and loss under
/// bfloat16 autocast (backward follows the dtypes the forward recorded).
void train_step(ig::nn::Module& model, ig::optim::SGD& opt, const ig::Tensor& x,
                const ig::Tensor& y, bool bf16) {
  ig::Tensor loss;
  {
    ig::amp::autocast mixed(ig::kBFloat16, bf16);
    loss = F::cross_entropy(model(x), y);
  }
  opt.zero_grad();
  loss.backward();
  opt.step();
}

void train_row(const Options& o, const char* row, const char* shape, ig::nn::Module& model,
               const ig::Shape& xshape, double flops_per_sample, bool resnet,
               bool bf16 = false) {
  const bool cl = o.channels_last && xshape.size() == 4;
  if (cl) model.to(ig::MemoryFormat::channels_last);
  ig::optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  const auto x = ig::randn(xshape, cl ? ig::MemoryFormat::channels_last : ig::MemoryFormat::contiguous);
  const auto y = ig::randint(0, 10, {xshape[0]});
  const double n = double(xshape[0]);
  const auto step = [&] { train_step(model, opt, x, y, bf16); };
  const double s = resnet ? time_median(step, 0, 1, o.resnet_steps)
                          : time_median(step, o.min_time, 3, 5);
  report(o, row, shape, s, n, 3 * flops_per_sample * n);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) o.threads = std::atoi(argv[++i]);
    else if (a == "--min-time" && i + 1 < argc) o.min_time = std::atof(argv[++i]);
    else if (a == "--resnet-steps" && i + 1 < argc) o.resnet_steps = std::atoi(argv[++i]);
    else if (a == "--channels-last") o.channels_last = true;
    else if (a == "--only" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string r; std::getline(ss, r, ',');) o.only.push_back(r);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--min-time S] [--resnet-steps N] [--only row,...] "
                   "[--channels-last]\n",
                   argv[0]);
      return 2;
    }
  }
  g_base_rss = proc_status_mb("VmRSS");
  ig::set_num_threads(o.threads);
  ig::manual_seed(0);
  using namespace ig::models;

  if (wanted(o, "gemm")) {
    const auto a = ig::randn({1024, 1024}), b = ig::randn({1024, 1024});
    const double s = time_median([&] { ig::matmul(a, b); }, o.min_time, 2, 5);
    report(o, "gemm", "1024x1024x1024", s, 0, 2.0 * 1024 * 1024 * 1024);
  }
  if (wanted(o, "mlp")) {
    MLP model;
    train_row(o, "mlp", "[64,10]", model, {64, 10}, mlp_flops(), false);
  }
  if (wanted(o, "small_cnn")) {
    SmallCNN model;
    train_row(o, "small_cnn", "[128,1,28,28]", model, {128, 1, 28, 28}, small_cnn_flops(), false);
  }
  const ResNetConfig cifar{.num_classes = 10, .stem = ResNetStem::Cifar};
  if (wanted(o, "resnet18_b32")) {
    auto model = resnet18(cifar);
    train_row(o, "resnet18_b32", "[32,3,32,32]", *model, {32, 3, 32, 32}, resnet18_cifar_flops(),
              true);
  }
  if (wanted(o, "resnet18_b128")) {
    auto model = resnet18(cifar);
    train_row(o, "resnet18_b128", "[128,3,32,32]", *model, {128, 3, 32, 32},
              resnet18_cifar_flops(), true);
  }
  if (wanted(o, "resnet18_b128_bf16")) {
    auto model = resnet18(cifar);
    train_row(o, "resnet18_b128_bf16", "[128,3,32,32]", *model, {128, 3, 32, 32},
              resnet18_cifar_flops(), true, true);
  }
  if (wanted(o, "resnet18_b128_bf16_cl")) {
    auto model = resnet18(cifar);
    Options cl = o;
    cl.channels_last = true;
    train_row(cl, "resnet18_b128_bf16_cl", "[128,3,32,32]", *model, {128, 3, 32, 32},
              resnet18_cifar_flops(), true, true);
  }
  if (wanted(o, "resnet18_infer")) {
    auto model = resnet18(cifar);
    model->eval();
    if (o.channels_last) model->to(ig::MemoryFormat::channels_last);
    ig::NoGradGuard no_grad;
    const auto x = ig::randn({128, 3, 32, 32}, o.channels_last ? ig::MemoryFormat::channels_last
                                                               : ig::MemoryFormat::contiguous);
    const double s = time_median([&] { (*model)(x); }, 0, 1, o.resnet_steps);
    report(o, "resnet18_infer", "[128,3,32,32]", s, 128, resnet18_cifar_flops() * 128);
  }
  return 0;
}
