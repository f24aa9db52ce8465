// Evaluating a model on a data set: the loaders that feed it (uint8 batches normalised on the
// device) and the pass itself, streamed into the library's ClassificationMetrics. Shared by
// `ignis train` (validation each epoch, test at the end) and `ignis eval`.
#pragma once

#include <ignis/ignis.h>
#include <ignis/metrics.h>

#include <memory>
#include <string>
#include <vector>

#include "data_parallel.h"
#include "train_data.h"

namespace ignis_cli {

struct EvalResult {
  explicit EvalResult(int64_t num_classes) : metrics(num_classes) {}
  double loss = 0;      ///< mean cross entropy (no label smoothing)
  double accuracy = 0;  ///< metrics.accuracy(), kept as a field for the epoch log
  double top5 = 0;      ///< top-5 accuracy when there are more than 5 classes, else 0
  int64_t n = 0;
  ignis::metrics::ClassificationMetrics metrics;
};

/// ToFloat then Normalize(d.mean, d.std): what every evaluation batch goes through (training
/// inserts its augmentation between the two).
std::vector<std::shared_ptr<ignis::data::BatchTransform>> eval_transforms(const TrainData& d);

/// An unshuffled loader over `set` with eval_transforms(d), delivering to `device`; over this
/// rank's ShardSampler share when `ranks` is distributed.
std::unique_ptr<ignis::data::DataLoader> make_eval_loader(
    ignis::data::DatasetPtr set,
    const TrainData& d,
    int64_t batch_size,
    int workers,
    const ignis::Device& device,
    uint64_t seed,
    const Ranks& ranks = {});

/// Loss, accuracy, top-5 and the confusion counts of `model` over `loader` (in eval mode;
/// the model is put back in train mode afterwards). With distributed `ranks` each rank passes
/// its shard's loader and every rank gets the result over all shards (a collective).
EvalResult evaluate(
    ignis::nn::Module& model,
    ignis::data::DataLoader& loader,
    int64_t num_classes,
    const Ranks& ranks = {});

/// "accuracy 91.20%  top-5 99.80%  loss 0.2512" (top-5 only with more than 5 classes).
std::string format_summary(const EvalResult& r);

}  // namespace ignis_cli
