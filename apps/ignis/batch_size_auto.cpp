// --batch-size auto (see batch_size_auto.h; the search is in batch_search.cpp).
#include "batch_size_auto.h"

#include <fmt/format.h>

#include <chrono>

#include "batch_search.h"
#include "model_setup.h"

namespace ig = ignis;
namespace F = ignis::nn::functional;

namespace ignis_cli {

int64_t choose_batch_size(
    const TrainOptions& o,
    const TrainData& d,
    const ig::Device& device,
    const OptimizerFactory& make_optimizer) {
  const int64_t train_size = d.train->size();
  if (!device.is_cuda()) {
    const int64_t batch = std::min<int64_t>(128, train_size);
    fmt::print(
        "batch   auto on the CPU: {} (the recipe's batch{}; memory rarely limits it on the CPU "
        "and a larger batch does not train faster there)\n",
        batch,
        batch < 128 ? ", capped by the training part's size" : "");
    return batch;
  }
  // Two steps per trial: the optimizer's state, created in the first step, is alive through
  // the second step's forward and backward passes, as in every later step of the run.
  auto trial = [&](int64_t batch) {
    std::unique_ptr<ig::nn::Module> model = make_model(o.model, d);
    model->to(device);
    model->train();
    auto optimizer = make_optimizer(model->parameters());
    const ig::Tensor x = ig::zeros({batch, d.channels, d.height, d.width}, {ig::kFloat32, device});
    const ig::Tensor y = ig::zeros({batch}, {ig::kInt64, device});
    for (int step = 0; step < 2; ++step) {
      optimizer->zero_grad();
      F::cross_entropy((*model)(x), y).backward();
      optimizer->step();
    }
    ig::cuda::synchronize(device.index);
  };
  const auto start = std::chrono::steady_clock::now();
  const BatchSearchResult r = find_largest_batch(
      trial, {.max_batch = train_size, .keep = 0.9}, [] { ig::cuda::empty_cache(); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "batch   auto on {}: {} ({}; {:.1f}s)\n", device.str(), r.chosen, r.explain(), seconds);
  return r.chosen;
}

}  // namespace ignis_cli
