// Airbench94Trainer (ignis/models.h): the airbench94 optimizer, schedule and lookahead.
#include <cmath>

#include "core/error.h"
#include "ignis/amp.h"
#include "ignis/autograd.h"
#include "ignis/cuda_graph.h"
#include "ignis/models.h"
#include "ignis/nn/functional.h"

namespace ignis::models {

Airbench94Trainer::Airbench94Trainer(AirbenchNet& model, int64_t batch_size, int64_t total_steps,
                                     const Airbench94Options& o)
    : model_(model),
      options_(o),
      total_steps_(total_steps),
      warmup_steps_(int64_t(double(total_steps) * o.warmup_fraction)) {
  IGNIS_CHECK(batch_size > 0 && total_steps > 0, ValueError,
              "[Airbench94Trainer] batch_size and total_steps must be positive, got {} and {}",
              batch_size, total_steps);
  IGNIS_CHECK(o.momentum >= 0 && o.momentum < 1, ValueError,
              "[Airbench94Trainer] momentum must be in [0, 1), got {}", o.momentum);
  const double step_gain = 1024 * (1 + 1 / (1 - o.momentum));
  const double lr = o.lr / step_gain;
  const double decay = o.weight_decay * double(batch_size) / step_gain;  // lr x weight decay
  const double bias_lr = lr * o.bias_lr_scale;
  std::vector<Tensor> norm_biases, others;
  for (auto& [name, p] : model.named_parameters()) {
    if (!p.requires_grad()) continue;
    (name.find(".norm") != std::string::npos ? norm_biases : others).push_back(p);
  }
  sgd_ = std::make_unique<optim::SGD>(
      others, optim::SGDOptions{.lr = lr, .momentum = o.momentum, .weight_decay = decay / lr,
                                .nesterov = true});
  sgd_->add_param_group(norm_biases, {{"lr", bias_lr}, {"weight_decay", decay / bias_lr}});
  schedule_ = std::make_unique<optim::LambdaLR>(
      *sgd_, [this](int64_t step) { return lr_factor(step); });
  lookahead_ = std::make_unique<optim::EmaLookahead>(model);
}

Airbench94Trainer::~Airbench94Trainer() = default;

double Airbench94Trainer::lr_factor(int64_t step) const {
  const Airbench94Options& o = options_;
  if (step < warmup_steps_) {
    const double f = double(step) / double(warmup_steps_);
    return o.start_factor * (1 - f) + f;
  }
  const double f = double(step - warmup_steps_) / double(total_steps_ - warmup_steps_);
  return (1 - f) + o.end_factor * f;
}

void Airbench94Trainer::begin_epoch(int64_t epoch) {
  const bool bias_trains = epoch < options_.whiten_bias_epochs;
  // A captured step keeps updating what trained when it was captured: capture anew.
  if (model_.whiten.bias.requires_grad() != bias_trains) graphed_.reset();
  model_.whiten.bias.requires_grad_(bias_trains);
  model_.train();
}

Tensor Airbench94Trainer::optimize(const Tensor& x, const Tensor& y, Tensor& logits) {
  Tensor loss;
  {
    amp::autocast cast(options_.autocast.value_or(kBFloat16), options_.autocast.has_value());
    logits = model_(x);
    nn::functional::CrossEntropyOptions ce;
    ce.label_smoothing = options_.label_smoothing;
    ce.reduction = nn::functional::Reduction::Sum;
    loss = nn::functional::cross_entropy(logits, y, ce);
  }
  sgd_->zero_grad(true);
  loss.backward();
  sgd_->step();
  return loss;
}

Airbench94Trainer::StepResult Airbench94Trainer::step(const Tensor& x, const Tensor& y) {
  StepResult r;
  if (options_.cuda_graph && x.device().is_cuda()) {
    // The graph has one output: [loss, the logits' values], float32 (capture_step detaches it).
    if (!graphed_)
      graphed_ = std::make_unique<cuda::CapturedStep>(
          [this](const Tensor& xb, const Tensor& yb) {
            Tensor logits;
            const Tensor loss = optimize(xb, yb, logits);
            NoGradGuard plain;
            return cat({loss.to(kFloat32).reshape({1}), logits.to(kFloat32).reshape({-1})});
          },
          cuda::CaptureOptions{});
    const Tensor out = (*graphed_)(x, y);
    r.loss = out[0];
    r.logits = out.narrow(0, 1, out.size(0) - 1).view({x.size(0), -1});
  } else {
    r.loss = optimize(x, y, r.logits);
  }
  schedule_->step();
  ++step_;
  if (step_ % options_.lookahead_every == 0) {
    const double progress = double(step_) / double(total_steps_);
    lookahead_->update(std::pow(0.95, double(options_.lookahead_every)) * progress * progress *
                       progress);
  }
  r.done = step_ >= total_steps_;
  if (r.done) lookahead_->update(1.0);
  return r;
}

bool Airbench94Trainer::step_in_cuda_graph() const { return graphed_ && graphed_->captured(); }

}  // namespace ignis::models
