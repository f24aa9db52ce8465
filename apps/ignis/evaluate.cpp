// Evaluation passes (see evaluate.h).
#include "evaluate.h"

#include <fmt/format.h>

namespace ig = ignis;
namespace F = ignis::nn::functional;

namespace ignis_cli {

std::vector<std::shared_ptr<ig::data::BatchTransform>> eval_transforms(const TrainData& d) {
  return {
      std::make_shared<ig::data::ToFloat>(), std::make_shared<ig::data::Normalize>(d.mean, d.std)};
}

std::unique_ptr<ig::data::DataLoader> make_eval_loader(
    ig::data::DatasetPtr set,
    const TrainData& d,
    int64_t batch_size,
    int workers,
    const ig::Device& device,
    uint64_t seed,
    const Ranks& ranks) {
  std::shared_ptr<const ig::data::Sampler> shard;
  if (ranks.distributed()) shard = std::make_shared<ShardSampler>(set->size(), ranks);
  return std::make_unique<ig::data::DataLoader>(
      set,
      ig::data::DataLoaderOptions{
          .batch_size = batch_size,
          .sampler = shard,
          .num_workers = workers,
          .device = device,
          .transform = ig::data::Compose(seed, eval_transforms(d))});
}

EvalResult evaluate(
    ig::nn::Module& model, ig::data::DataLoader& loader, int64_t num_classes, const Ranks& ranks) {
  ig::NoGradGuard no_grad;
  model.eval();
  EvalResult r(num_classes);
  double loss = 0;
  for (auto& batch : loader) {
    ig::Tensor logits = model(batch.x());
    loss += F::cross_entropy(logits, batch.y(), {.reduction = F::Reduction::Sum}).item<double>();
    r.metrics.update(logits, batch.y());
  }
  model.train();
  if (ranks.distributed()) {  // every shard's counts and loss, summed: the whole set's
    std::vector<int64_t> counts = r.metrics.counts();
    std::vector<double> loss_sum{loss};
    sum_across_ranks(ranks, counts);
    sum_across_ranks(ranks, loss_sum);
    r.metrics.set_counts(counts);
    loss = loss_sum[0];
  }
  r.n = r.metrics.num_samples();
  if (r.n) {
    r.loss = loss / double(r.n);
    r.accuracy = r.metrics.accuracy();
    if (num_classes > 5) r.top5 = r.metrics.top_k_accuracy(5);
  }
  return r;
}

std::string format_summary(const EvalResult& r) {
  std::string s = fmt::format("accuracy {:.2f}%", 100 * r.accuracy);
  if (r.metrics.num_classes() > 5) s += fmt::format("  top-5 {:.2f}%", 100 * r.top5);
  return s + fmt::format("  loss {:.4f}", r.loss);
}

}  // namespace ignis_cli
