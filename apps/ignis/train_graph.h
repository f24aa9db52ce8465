// `ignis train` on a GPU: the whole optimizer step (forward under autocast, loss, backward,
// optimizer step) captured into a CUDA graph with ignis::cuda::capture_step and replayed for
// each batch. Used by default when the run allows it (--cuda-graphs auto): one CUDA device,
// one process, no gradient accumulation, no fp16 GradScaler, --on-nonfinite stop and no
// --detect-anomaly (those decide per step on the host whether to step). A step the graph
// cannot hold (Adam's host step count, dropout's random numbers …) is reported in one line
// and the run continues with the eager step.
#pragma once

#include <ignis/ignis.h>

#include <memory>

#include "options.h"
#include "train_amp.h"

namespace ignis_cli {

/// The step's finiteness check, eager or captured: true (0-dim, on the device, not read back)
/// when `loss_sum` and, with `gradients`, every gradient of `model` hold no inf or NaN.
ignis::Tensor loss_and_gradients_finite(
    const ignis::Tensor& loss_sum, ignis::nn::Module& model, bool gradients = true);

class GraphedStep {
 public:
  static bool eligible(
      const TrainOptions& o, const ignis::Device& device, bool distributed, const TrainAmp& amp);
  GraphedStep(
      ignis::nn::Module& model,
      ignis::optim::Optimizer& optimizer,
      const TrainOptions& o,
      const TrainAmp& amp);
  /// One optimizer step on (x, y): true with the batch's loss sum, correct count and whether
  /// the loss and every gradient were finite (0-dim device tensors, as the eager step's);
  /// false when the step cannot be captured (said once on stdout): the caller then takes its
  /// eager step, now and from then on.
  bool run(
      const ignis::Tensor& x,
      const ignis::Tensor& y,
      ignis::Tensor& loss_sum,
      ignis::Tensor& correct,
      ignis::Tensor& finite);

 private:
  bool active_ = true;
  ignis::cuda::CapturedStep step_;
};

}  // namespace ignis_cli
