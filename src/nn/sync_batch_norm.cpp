// SyncBatchNorm's training-mode forward and convert_sync_batchnorm.
//
// The statistics are those of the concatenated batch of all ranks, written with ordinary
// differentiable ops around one op of our own, a differentiable all-reduce sum: its forward
// sums a tensor over the ranks and its backward sums the incoming gradient over the ranks
// (every rank's loss depends on every rank's contribution to the sum). Forward all-reduces
// the per-channel sum of x (with the sample count) and then the per-channel sum of squared
// deviations from the global mean — two passes, as numerically safe as a single-process
// variance. Backward therefore all-reduces exactly the two per-channel sums the input
// gradient needs: the gradients reaching those two sums.
//
// The group is a duplicate of the default one (convert_sync_batchnorm makes it), so these
// collectives never interleave with DistributedDataParallel's bucket all-reduces, which run
// during the same backward pass.
#include "nn/sync_batch_norm.h"

#include <fmt/format.h>

#include "autograd/record.h"
#include "core/error.h"
#include "ignis/distributed.h"
#include "ignis/nn/parallel.h"
#include "ignis/ops.h"

namespace ignis::nn {
namespace detail {
namespace {

using ignis::detail::record;

// Sum over the group's ranks, recorded for autograd: the gradient of each rank's input is
// the sum over the ranks of the gradients of the output.
// The graph holds the group, so a backward may run after the module is gone.
Tensor all_reduce_sum(const Tensor& x, const std::shared_ptr<distributed::ProcessGroup>& group) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x.detach().clone();
    group->all_reduce(out, distributed::ReduceOp::Sum);
  }
  if (ignis::detail::needs_grad({&x})) {
    std::shared_ptr<distributed::ProcessGroup> g = group;
    record("sync_batch_norm_all_reduce", {out}, {x}, {}, [g](const auto& grads, const auto&) {
      Tensor total = grads[0].defined() ? grads[0].contiguous().clone() : Tensor();
      if (!total.defined()) return std::vector<Tensor>{Tensor()};
      g->all_reduce(total, distributed::ReduceOp::Sum);
      return std::vector<Tensor>{total};
    });
  }
  return out;
}

}  // namespace

Tensor sync_batch_norm(BatchNorm& bn, const Tensor& x) {
  const std::shared_ptr<distributed::ProcessGroup>& group = bn.sync_group;
  const int64_t C = bn.num_features;
  Shape reduce_dims{0};
  Shape channel_shape{1, C};
  for (int64_t d = 2; d < x.dim(); ++d) {
    reduce_dims.push_back(d);
    channel_shape.push_back(1);
  }
  const int64_t local_count = C > 0 ? x.numel() / C : 0;
  // [sum of x per channel..., sample count]: one collective for both.
  Tensor count = full({1}, Scalar(double(local_count)), {x.dtype(), x.device()});
  Tensor sums = all_reduce_sum(cat({x.sum(reduce_dims), count}), group);
  const double total = sums.narrow(0, C, 1).item<double>();
  IGNIS_CHECK(total > 0, ValueError,
              "[SyncBatchNorm] every rank's batch is empty: no samples to take statistics of");
  IGNIS_CHECK(total > 1 || !bn.config.track_running_stats, ValueError,
              "[SyncBatchNorm] one value per channel over all ranks; the unbiased running "
              "variance needs at least two");
  const Tensor mean = sums.narrow(0, 0, C) / total;
  const Tensor centred = x - mean.view(channel_shape);
  const Tensor var = all_reduce_sum((centred * centred).sum(reduce_dims), group) / total;
  Tensor y = centred * rsqrt(var + bn.config.eps).view(channel_shape);
  if (bn.weight.defined()) y = y * bn.weight.view(channel_shape) + bn.bias.view(channel_shape);
  if (bn.config.track_running_stats && bn.is_training()) {
    NoGradGuard no_grad;
    const double m = bn.config.momentum;
    bn.running_mean.mul_(1 - m).add_(mean.detach() * m);
    bn.running_var.mul_(1 - m).add_(var.detach() * (m * total / (total - 1)));
  }
  return y;
}

}  // namespace detail

SyncBatchNorm::SyncBatchNorm(int64_t num_features, const BatchNormConfig& config,
                             std::shared_ptr<distributed::ProcessGroup> group)
    : BatchNorm(num_features, config, 2, 5, "SyncBatchNorm") {
  sync_group = group ? std::move(group) : distributed::default_group().duplicate();
}

SyncBatchNorm::SyncBatchNorm(Module* parent, std::string name, int64_t num_features,
                             const BatchNormConfig& config,
                             std::shared_ptr<distributed::ProcessGroup> group)
    : BatchNorm(parent, std::move(name), num_features, config, 2, 5, "SyncBatchNorm") {
  sync_group = group ? std::move(group) : distributed::default_group().duplicate();
}

int64_t convert_sync_batchnorm(Module& root, std::shared_ptr<distributed::ProcessGroup> group) {
  int64_t converted = 0;
  for (const auto& [name, m] : root.named_modules()) {
    auto* bn = dynamic_cast<BatchNorm*>(m);
    if (bn == nullptr) continue;
    if (!group) group = distributed::default_group().duplicate();
    bn->sync_group = group;
    ++converted;
  }
  return converted;
}

}  // namespace ignis::nn
