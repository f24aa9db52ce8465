// EmaLookahead (ignis/optim/lookahead.h).
#include "ignis/optim/lookahead.h"

#include "core/error.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"

namespace ignis::optim {

EmaLookahead::EmaLookahead(const nn::Module& module) {
  NoGradGuard no_grad;
  auto track = [&](const std::vector<std::pair<std::string, Tensor>>& named) {
    for (const auto& [name, t] : named) {
      if (!t.defined() || !is_floating(t.dtype())) continue;
      live_.push_back(t);
      averages_.emplace_back(name, t.detach().clone());
    }
  };
  track(module.named_parameters());
  track(module.named_buffers());
}

void EmaLookahead::update(double decay) {
  IGNIS_CHECK(decay >= 0 && decay <= 1, ValueError,
              "[EmaLookahead] decay must be in [0, 1], got {}", decay);
  NoGradGuard no_grad;
  for (size_t i = 0; i < live_.size(); ++i) {
    Tensor& average = averages_[i].second;
    // a + (1 - decay)(t - a): exactly a when decay is 1, exactly t when it is 0.
    average.add_(live_[i] - average, 1 - decay);
    Tensor live = live_[i];
    live.copy_(average);
  }
}

}  // namespace ignis::optim
