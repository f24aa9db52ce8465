// The optimizers' path to the multi-tensor update kernel (src/ops/optim_kernels.h): it picks
// the parameters of a group the kernel takes (float32, contiguous, with their gradient and
// state on the same device), creates their state, and calls the kernel once per device. The
// rest go through the per-parameter update.
#pragma once

#include <optional>
#include <vector>

#include "ignis/optim/optimizer.h"
#include "ops/optim_kernels.h"

namespace ignis::optim {

/// Where a CUDA graph capture's SGD update reads its step values: float64 {lr, momentum} on
/// `device`, which a replay hook refreshes before every replay (Note [Whole-step capture]).
struct CapturedStepValues {
  Device device;
  const double* values = nullptr;
};

/// Applies `rule` with the group's options to every parameter of `params` the kernel takes
/// and returns the others. decoupled selects AdamW's weight decay (rule adam only). During a
/// CUDA graph capture only SGD given `captured` takes the kernel (one launch per 32 tensors
/// in the graph instead of one per parameter), for the parameters on its device whose state
/// exists; every other parameter is returned.
std::vector<ParamUpdate> multi_tensor_step(
    ignis::detail::OptimRule rule,
    const std::vector<ParamUpdate>& params,
    const GroupOptions& options,
    bool decoupled = false,
    const std::optional<CapturedStepValues>& captured = std::nullopt);

/// Adds one to the parameter's "step" counter (a CPU float32 scalar, as PyTorch keeps it,
/// created at 0) and returns the new count.
double bump_step(ParamState& state);

}  // namespace ignis::optim
