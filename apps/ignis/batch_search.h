// --batch-size auto, the search itself: the largest batch whose training step fits in memory,
// found by running trial steps. Kept apart from the device and the model (the trial is a
// callable), so the search is tested with a fake step that runs out of memory above a
// threshold.
//
// The search: batches 1, 2, 4, ... (each capped at max_batch) until one runs out of memory or
// max_batch fits; then bisection between the largest that fitted and the smallest that did not,
// until they are within 1/64 of the largest (exactly, for batches under 128). `release` runs after every trial, so a trial starts from an empty
// cache and a failed one leaves nothing behind. Only OutOfMemoryError counts as "does not
// fit"; any other error of the trial propagates. The choice keeps a margin below the boundary
// (keep = 0.9: 90% of the largest batch that fitted, at least 1), since a real run also holds
// the data loader's batches and fragments memory over time; when max_batch itself fits there is
// no boundary to keep away from and max_batch is chosen.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ignis_cli {

struct BatchSearchOptions {
  int64_t max_batch = 1;  ///< at least 1; e.g. the training part's size
  double keep = 0.9;      ///< fraction of the largest fitting batch chosen, in (0, 1]
};

struct BatchSearchResult {
  int64_t largest_fit = 0;   ///< largest batch whose trial succeeded
  int64_t smallest_oom = 0;  ///< smallest batch that ran out of memory (0: none did)
  int64_t chosen = 0;        ///< what to train with
  int trials = 0;
  double keep = 0.9;        ///< the margin applied (BatchSearchOptions::keep)
  std::string oom_message;  ///< the out-of-memory error at smallest_oom
  /// smallest_oom was refused by a library's size limit (NotImplementedError after a smaller
  /// batch ran, e.g. cuDNN's 2^31-element tensors), not by memory.
  bool size_limit = false;
  /// One line for the log: what fitted, what did not, and why `chosen`.
  std::string explain() const;
};

/// Runs the search above. Throws UsageError when even a batch of 1 runs out of memory.
BatchSearchResult find_largest_batch(
    const std::function<void(int64_t batch)>& trial,
    const BatchSearchOptions& options,
    const std::function<void()>& release = {});

}  // namespace ignis_cli
