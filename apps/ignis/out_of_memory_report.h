// `ignis train` running out of memory: instead of the allocator's message, one line with what
// the user can change — the batch size it happened at, where in the run, the memory figures
// (requested, free, allocated and reserved, when the caching allocator gave them), what to try
// (a smaller --batch-size, --accumulate, --batch-size auto), and the state of the last
// checkpoint, which an out-of-memory error never touches (checkpoints are replaced atomically
// and only between steps). The exit status is the trainer's error status, 2.
#pragma once

#include <ignis/error.h>

#include <cstdint>
#include <functional>
#include <string>

namespace ignis_cli {

/// How far `ignis train` got, filled in by run_train as it goes, for the message.
struct TrainProgress {
  int64_t batch_size = 0;  ///< 0 until the batch size is resolved
  int64_t accumulate = 1;
  std::string amp = "off";  ///< --amp: mixed precision roughly halves activation memory
  std::string run_dir;  ///< "" until the run directory exists
  /// The training step being run (1-based; epoch 0 = training has not started).
  int64_t epoch = 0, step = 0, steps_per_epoch = 0;
};

/// The one-line message (without the "ignis: error: " prefix).
std::string out_of_memory_message(const ignis::OutOfMemoryError& e, const TrainProgress& p);

/// Runs `train` with a fresh TrainProgress; an OutOfMemoryError escaping it becomes a
/// UsageError carrying out_of_memory_message. Anything else passes through unchanged.
int run_reporting_out_of_memory(const std::function<int(TrainProgress&)>& train);

}  // namespace ignis_cli
