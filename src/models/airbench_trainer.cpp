// Airbench94Trainer (ignis/models.h): the airbench94 optimizer, schedule and lookahead.
#include <cmath>

#include "core/error.h"
#include "ignis/amp.h"
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
  model_.whiten.bias.requires_grad_(epoch < options_.whiten_bias_epochs);
  model_.train();
}

Airbench94Trainer::StepResult Airbench94Trainer::step(const Tensor& x, const Tensor& y) {
  StepResult r;
  {
    amp::autocast cast(options_.autocast.value_or(kBFloat16), options_.autocast.has_value());
    r.logits = model_(x);
    r.loss = nn::functional::cross_entropy(
        r.logits, y,
        {.label_smoothing = options_.label_smoothing,
         .reduction = nn::functional::Reduction::Sum});
  }
  sgd_->zero_grad(true);
  r.loss.backward();
  sgd_->step();
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

}  // namespace ignis::models
