// GPU training throughput: the layers the two main workloads run (cuDNN convolution, batch
// norm, pooling, fused cross-entropy, fused SGD) and whole training steps of the issue's
// workloads, one JSON line per row; bench/gpu_train.py prints the same rows for PyTorch, and
// bench/compare.sh (run by scripts/gpu-check.sh) sets the two side by side. Exits 77 without
// a GPU.
//   step rows: the MLP 10 -> 512 -> 10 at batch 64, models::SmallCNN on [128, 1, 28, 28],
//     ResNet-18 (CIFAR stem) on [128 | 512, 3, 32, 32] in float32 and under bf16 autocast,
//     the bf16 rows channels-last (model and input), as gpu_train.py runs PyTorch's.
//   layer rows: median of CUDA-event timed repetitions after a warm-up.
//   step rows (forward, cross_entropy, zero_grad, backward, SGD(lr 0.01, momentum 0.9)
//     step; random inputs made once on the GPU): `steps` steps queued back to back, then one
//     synchronize (no item() in the loop), so the time includes the host's launch cost.
//   rows with "variant": "graphs": the same step through cuda::capture_step (its warm-up and
//     capture in the warm-up steps; each timed step copies x and y into the static inputs and
//     replays).
//   peak_MiB: the caching allocator's peak of live tensors during the row.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "ignis/cuda.h"
#include "ignis/cuda_graph.h"
#include "ignis/ignis.h"
#include "ignis/models.h"
#include "gpu_timing.h"

namespace {
using namespace ignis;
namespace F = nn::functional;

const Device kGpu = Device::cuda(0);

using bench::gpu_median_ms;

void layer_row(const char* name, double ms) {
  fmt::print(
      "{{\"engine\": \"ignis\", \"device\": \"cuda\", \"row\": \"{}\", \"ms\": {:.4f}, "
      "\"seconds\": {:.6g}}}\n",
      name,
      ms,
      ms / 1e3);
  std::fflush(stdout);
}

/// `steps` training steps of model on (x, y), timed from the first launch to the final
/// synchronize, after `warmup` steps (captured: through cuda::capture_step); prints steps/s
/// and samples/s. With `bf16`, the forward and the loss run under bfloat16 autocast.
void step_row(const char* name, nn::Module& model, const Tensor& x, const Tensor& y, int warmup,
              int steps, bool bf16 = false, bool captured = false) {
  optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  const auto body = [&](const Tensor& xb, const Tensor& yb) {
    Tensor loss;
    {
      amp::autocast mixed(kBFloat16, bf16);
      loss = F::cross_entropy(model.forward(xb), yb);
    }
    opt.zero_grad();
    loss.backward();
    opt.step();
    return loss;
  };
  cuda::CapturedStep graph = cuda::capture_step(body, {.on_fallback = [&](const std::string& m) {
    // The message quoted and escaped as JSON (it may hold quotes or backslashes).
    fmt::print("{{\"engine\": \"ignis\", \"row\": \"{}\", \"info\": {}}}\n", name,
               nlohmann::json(m).dump());
  }});
  const auto step = [&] { captured ? graph(x, y) : body(x, y); };
  if (captured) warmup = std::max(warmup, 5);  // 3 eager warm-ups, the capture, a replay
  for (int i = 0; i < warmup; ++i) step();
  cuda::synchronize();
  cuda::reset_peak_memory_stats(0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  cuda::synchronize();
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(
      "{{\"engine\": \"ignis\", \"device\": \"cuda\", \"row\": \"{}\", \"variant\": \"{}\", "
      "\"batch\": {}, \"seconds\": {:.6g}, \"steps_per_s\": {:.2f}, \"samples_per_s\": {:.1f}, "
      "\"peak_MiB\": {}}}\n",
      name,
      captured ? "graphs" : "eager",
      x.size(0),
      sec / steps,
      steps / sec,
      double(steps) * double(x.size(0)) / sec,
      cuda::memory_stats(0).peak_allocated >> 20);
  std::fflush(stdout);
}
}  // namespace

int main() {
  if (!cuda::is_available()) {
    fmt::print(stderr, "gpu_train: no CUDA device\n");
    return 77;
  }
  fmt::print(
      "{{\"info\": \"{}\", \"cudnn\": {}}}\n",
      cuda::get_device_properties(0).name,
      cuda::cudnn_version());
  const TensorOptions f32(kFloat32, kGpu);
  // ResNet-18's first stage at batch 256: [256, 64, 32, 32].
  const Tensor x = randn({256, 64, 32, 32}, f32).requires_grad_();
  const Tensor w = (randn({64, 64, 3, 3}, f32) * 0.05).requires_grad_();
  const Tensor g = randn({256, 64, 32, 32}, f32);
  layer_row("conv3x3_64_b256_fwd", gpu_median_ms([&] {
              Tensor r = conv2d(x.detach(), w.detach(), {}, {.padding = {1, 1}});
            }));
  layer_row("conv3x3_64_b256_fwd_bwd", gpu_median_ms([&] {
              conv2d(x, w, {}, {.padding = {1, 1}}).backward(g);
            }));
  const Tensor rm = zeros({64}, f32), rv = ones({64}, f32);
  const Tensor gamma = ones({64}, f32).requires_grad_(), beta = zeros({64}, f32).requires_grad_();
  layer_row("batch_norm_64_b256_fwd", gpu_median_ms([&] {
              Tensor r = batch_norm(x.detach(), rm, rv, gamma.detach(), beta.detach(), true);
            }));
  layer_row("batch_norm_64_b256_fwd_bwd", gpu_median_ms([&] {
              batch_norm(x, rm, rv, gamma, beta, true).backward(g);
            }));
  layer_row("max_pool3x3s2_64_b256_fwd", gpu_median_ms([&] {
              Tensor r = max_pool2d(
                  x.detach(), {.kernel_size = {3, 3}, .stride = Size2{2, 2}, .padding = {1, 1}});
            }));
  layer_row("adaptive_avg_pool_512x4x4_b256_fwd", gpu_median_ms([&] {
              Tensor r = adaptive_avg_pool2d(
                  x.detach().narrow(1, 0, 8).reshape({256, 512, 4, 4}), {1, 1});
            }));
  const Tensor logits = randn({4096, 1000}, f32),
               labels = randint(0, 1000, {4096}, TensorOptions(kInt64, kGpu));
  layer_row("cross_entropy_4096x1000_fwd", gpu_median_ms([&] { F::cross_entropy(logits, labels); }));
  {
    Tensor p = randn({11'000'000}, f32).requires_grad_();
    optim::SGD opt({p}, {.lr = 0.01, .momentum = 0.9});
    p.sum().backward();
    layer_row("sgd_momentum_11M", gpu_median_ms([&] { opt.step(); }));
  }

  manual_seed(0);
  models::MLP mlp;
  mlp.to(kGpu);
  step_row(
      "mlp_b64",
      mlp,
      randn({64, 10}, f32),
      randint(0, 10, {64}, TensorOptions(kInt64, kGpu)),
      20,
      500);
  // The same row captured (as `ignis train` runs it on a GPU): ratio_table.py keeps Ignis's
  // faster variant of each row, and the line says which.
  step_row(
      "mlp_b64",
      mlp,
      randn({64, 10}, f32),
      randint(0, 10, {64}, TensorOptions(kInt64, kGpu)),
      20,
      500,
      /*bf16=*/false,
      /*captured=*/true);
  const TensorOptions labels_opt(kInt64, kGpu);
  models::SmallCNN cnn;
  cnn.to(kGpu);
  step_row(
      "small_cnn_b128", cnn, randn({128, 1, 28, 28}, f32), randint(0, 10, {128}, labels_opt), 10, 200);
  for (const bool bf16 : {false, true})
    for (const int64_t batch : {128, 512}) {
      manual_seed(0);
      auto resnet = models::resnet18(
          {.in_channels = 3, .num_classes = 10, .stem = models::ResNetStem::Cifar});
      resnet->to(kGpu);
      const MemoryFormat format = bf16 ? MemoryFormat::channels_last : MemoryFormat::contiguous;
      resnet->to(format);
      const std::string name = fmt::format("resnet18_b{}{}", batch, bf16 ? "_bf16" : "");
      step_row(
          name.c_str(),
          *resnet,
          randn({batch, 3, 32, 32}, f32).contiguous(format),
          randint(0, 10, {batch}, labels_opt),
          3,
          batch == 128 ? 40 : 15,
          bf16);
    }
  return 0;
}
