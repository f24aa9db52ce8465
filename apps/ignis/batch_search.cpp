// The search of --batch-size auto (see batch_search.h).
#include "batch_search.h"

#include <fmt/format.h>
#include <ignis/error.h>

#include <algorithm>
#include <cmath>

#include "options.h"

namespace ignis_cli {

std::string BatchSearchResult::explain() const {
  if (smallest_oom == 0)
    return fmt::format(
        "the whole training part, {}, fitted in a trial step ({} trials)", largest_fit, trials);
  return fmt::format(
      "{} fitted in a trial step and {} {} ({} trials); {:g}% of it kept, a margin for the "
      "loader's batches and fragmentation",
      largest_fit,
      smallest_oom,
      size_limit ? "exceeded a library's size limit" : "ran out of memory",
      trials,
      100 * keep);
}

BatchSearchResult find_largest_batch(
    const std::function<void(int64_t)>& trial,
    const BatchSearchOptions& options,
    const std::function<void()>& release) {
  const int64_t max_batch = std::max<int64_t>(options.max_batch, 1);
  BatchSearchResult r;
  r.keep = options.keep;
  // True when `batch` fits; the trial's memory is released either way.
  bool limit = false;  // the last failed trial hit a size limit, not memory
  auto fits = [&](int64_t batch) {
    ++r.trials;
    bool ok = true;
    try {
      trial(batch);
    } catch (const ignis::OutOfMemoryError& e) {
      ok = false;
      limit = false;
      r.oom_message = e.what();
    } catch (const ignis::NotImplementedError& e) {
      // Refused at this size after a smaller batch ran: a library's size limit (cuDNN's
      // 2^31-element tensors) bounds the batch as memory does. At the first trial it is a
      // real error.
      if (r.largest_fit == 0) {
        if (release) release();
        throw;
      }
      ok = false;
      limit = true;
      r.oom_message = e.what();
    }
    if (release) release();
    return ok;
  };
  for (int64_t b = 1;; b = std::min(2 * b, max_batch)) {
    if (!fits(b)) {
      r.smallest_oom = b;
      break;
    }
    r.largest_fit = b;
    if (b == max_batch) break;
  }
  if (r.largest_fit == 0)
    throw UsageError(fmt::format(
        "--batch-size auto: even a batch of 1 does not fit in memory ({}); use a smaller "
        "--model, free the device's memory, or train on another --device",
        r.oom_message));
  std::string boundary_message = r.oom_message;
  bool boundary_limit = limit;
  // Bisection to within 1/64 of the largest fit (exactly below 128): 90% of it is kept, so the
  // last trials, the largest and slowest, would move the choice by under 2%.
  while (r.smallest_oom - r.largest_fit > std::max<int64_t>(1, r.largest_fit / 64)) {
    const int64_t mid = r.largest_fit + (r.smallest_oom - r.largest_fit) / 2;
    if (fits(mid)) {
      r.largest_fit = mid;
    } else {
      r.smallest_oom = mid;
      boundary_message = r.oom_message;
      boundary_limit = limit;
    }
  }
  r.oom_message = boundary_message;
  r.size_limit = r.smallest_oom != 0 && boundary_limit;
  r.chosen = r.smallest_oom == 0
                 ? r.largest_fit
                 : std::max<int64_t>(1, int64_t(std::floor(double(r.largest_fit) * options.keep)));
  return r;
}

}  // namespace ignis_cli
