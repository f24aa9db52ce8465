// checkpoint.safetensors: everything `ignis train` needs to continue a run so that it ends with
// the weights an uninterrupted run would have had, bit for bit. Written after every epoch (and
// every --checkpoint-every steps, and on SIGINT/SIGTERM), atomically: a complete new file
// replaces the old one by rename, so a crash at any moment leaves the last complete checkpoint.
//
// What is saved, and why that is every piece of state the run depends on:
//   tensors  model/<key>      weights and buffers (batch-norm statistics)
//            best/<key>       the best epoch's weights and buffers (the ones finally saved)
//            optimizer/<i>/<name>  per-parameter optimizer state (momentum buffers, Adam
//                             moments and step counts), i = position across all groups
//            epoch/loss_sum, epoch/correct_sum  running sums of the epoch in progress
//            grad_scaler/<key>  --amp fp16: the GradScaler's state_dict (scale, growth
//                             tracker, factors), float64 scalars
//   metadata "state"      epoch, step within the epoch, the schedule's step, best accuracy
//                         and epoch, the per-epoch history (metrics.jsonl), the global
//                         generator's seed and offset (initialisation, dropout)
//            "optimizer"  each parameter group's options (lr, momentum, betas ...)
//            "config"     the run's config.json
//            "checksum"   FNV-1a 64 of all tensor bytes, so a damaged file is refused
// The shuffle order and the augmentation need no state: both are keyed by (seed, epoch), so
// setting the loader's epoch reproduces them.
#pragma once

#include <ignis/ignis.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ignis_cli {

/// The trainer's progress, apart from the model and the optimizer.
struct TrainState {
  int64_t epoch = 0;          ///< epochs completed
  int64_t step = 0;           ///< optimizer steps done in epoch + 1 (0: at an epoch boundary)
  int64_t schedule_step = 0;  ///< the LR schedule's last_epoch()
  double best_accuracy = -1;
  int64_t best_epoch = 0;
  std::vector<nlohmann::json> history;  ///< metrics.jsonl's epoch records
  ignis::nn::StateDict best;            ///< empty until an epoch completes
  // The epoch in progress (step > 0).
  ignis::Tensor loss_sum, correct_sum;
  int64_t seen = 0, skipped = 0;
  std::map<std::string, double> grad_scaler;  ///< --amp fp16: GradScaler::state_dict()
};

/// What a checkpoint holds, read back.
struct Checkpoint {
  TrainState state;
  ignis::nn::StateDict model;
  ignis::optim::OptimizerStateDict optimizer;
  nlohmann::json config;
  uint64_t rng_seed = 0, rng_offset = 0;
};

/// Writes `path` atomically (a complete `path`.next renamed over it). Throws UsageError naming
/// the file when it cannot be written (a full disk, say); the old checkpoint is then intact.
void save_checkpoint(
    const std::string& path,
    const TrainState& state,
    const ignis::nn::Module& model,
    const ignis::optim::Optimizer& optimizer,
    const nlohmann::json& config);

/// Reads and checks `path`; UsageError (naming `run_dir`) when it is missing or damaged.
Checkpoint read_checkpoint(const std::string& path, const std::string& run_dir);

/// Removes what an interrupted write can leave next to `path` (its .next and temp files).
void remove_checkpoint_leftovers(const std::string& path);

// ---- stop requests --------------------------------------------------------------------------
/// Makes SIGINT and SIGTERM request a stop instead of killing the process; a second signal
/// kills as usual (the handler restores the default action).
void install_stop_handlers();
/// The signal that requested a stop, or 0.
int stop_signal();

}  // namespace ignis_cli
