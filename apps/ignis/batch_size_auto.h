// --batch-size auto for `ignis train`: on a GPU, the largest batch whose training step fits
// (find_largest_batch with trial steps of the run's model and optimizer on zero-filled inputs
// of the data's shape, the cache released after each); on the CPU, the recipe's batch of 128,
// since main memory rarely limits it and a larger batch does not train faster there. Either
// way capped by the training part's size, and the choice and the reason are printed.
#pragma once

#include <ignis/ignis.h>

#include <functional>
#include <memory>
#include <vector>

#include "options.h"
#include "train_data.h"

namespace ignis_cli {

using OptimizerFactory =
    std::function<std::unique_ptr<ignis::optim::Optimizer>(std::vector<ignis::Tensor>)>;

/// The batch size to train with. Uses the global random generator (the trial models'
/// initial weights): seed it after this call.
int64_t choose_batch_size(
    const TrainOptions& o,
    const TrainData& d,
    const ignis::Device& device,
    const OptimizerFactory& make_optimizer);

}  // namespace ignis_cli
