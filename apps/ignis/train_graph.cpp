// The trainer's captured step (train_graph.h).
#include "train_graph.h"

#include <fmt/format.h>
#include <ignis/cuda_graph.h>

#include <cstdio>

namespace ignis_cli {
namespace ig = ignis;

ig::Tensor loss_and_gradients_finite(
    const ig::Tensor& loss_sum, ig::nn::Module& model, bool gradients) {
  std::vector<ig::Tensor> checked{loss_sum};  // one multi-tensor pass over all of them
  if (gradients)
    for (const ig::Tensor& p : model.parameters())
      if (p.grad().defined()) checked.push_back(p.grad());
  return ig::all_finite(checked);
}

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
            const ig::Tensor sum = loss.detach() * double(x.size(0));
            const ig::Tensor finite = loss_and_gradients_finite(sum, model);  // as eager steps
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
