// The trainer's captured step (train_graph.h).
#include "train_graph.h"

#include <fmt/format.h>
#include <ignis/cuda_graph.h>

#include <cstdio>

namespace ignis_cli {
namespace ig = ignis;

bool GraphedStep::eligible(
    const TrainOptions& o, const ig::Device& device, bool distributed, const TrainAmp& amp) {
  return o.cuda_graphs == "auto" && device.is_cuda() && !distributed && o.accumulate == 1 &&
         !amp.scaler_checks_gradients() && o.on_nonfinite == "stop" && !o.detect_anomaly;
}

GraphedStep::GraphedStep(
    ig::nn::Module& model,
    ig::optim::Optimizer& optimizer,
    const TrainOptions& o,
    const TrainAmp& amp)
    : step_(ig::cuda::capture_step(
          [&model, &optimizer, &amp, smoothing = o.label_smoothing](
              const ig::Tensor& x, const ig::Tensor& y) {
            optimizer.zero_grad();
            ig::Tensor logits, loss;
            {
              ig::amp::autocast mixed(amp.dtype(), amp.autocast_enabled());
              logits = model(x);
              loss = ig::nn::functional::cross_entropy(logits, y, {.label_smoothing = smoothing});
            }
            loss.backward();
            ig::NoGradGuard no_grad;
            // The eager step's check: the loss sum and every gradient, one multi-tensor pass.
            const ig::Tensor sum = loss.detach() * double(x.size(0));
            std::vector<ig::Tensor> checked{sum};
            for (const ig::Tensor& p : model.parameters())
              if (p.grad().defined()) checked.push_back(p.grad());
            const ig::Tensor finite = ig::all_finite(checked);
            optimizer.step();
            // [loss sum, correct, finite]: the eager step's running sums and its check, kept
            // on the device.
            return ig::stack(
                {sum, (logits.argmax(1) == y).sum().to(sum.dtype()), finite.to(sum.dtype())});
          },
          {.on_fallback = {}})) {}  // no fallback inside: run() reports and the caller steps

bool GraphedStep::run(
    const ig::Tensor& x,
    const ig::Tensor& y,
    ig::Tensor& loss_sum,
    ig::Tensor& correct,
    ig::Tensor& finite) {
  if (!active_) return false;
  ig::Tensor sums;
  try {
    sums = step_(x, y);
  } catch (const std::exception& e) {
    if (step_.captured()) throw;  // a replay that fails is a real error
    active_ = false;
    fmt::print(
        "ignis: training step not captured into a CUDA graph, training eagerly: {}\n", e.what());
    std::fflush(stdout);
    return false;
  }
  // Copies (the graph's output is overwritten by the next replay) with the eager step's
  // shapes and dtypes, which the checkpoint stores: 0-dim, the count as int64.
  loss_sum = sums[0].clone();
  correct = sums[1].to(ig::kInt64);
  finite = sums[2].to(ig::kBool);
  return true;
}

}  // namespace ignis_cli
