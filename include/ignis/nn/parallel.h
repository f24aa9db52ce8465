// nn::DistributedDataParallel: data-parallel training over the ranks of a process group
// (PyTorch's torch.nn.parallel.DistributedDataParallel). Each rank runs the same model on its
// own share of the batch; during backward the gradients are averaged across ranks, in buckets
// whose all-reduce starts as soon as the bucket's last gradient is ready, overlapping the
// communication with the rest of backward. After backward every rank holds the same gradients,
// so the same optimizer step keeps the replicas equal. After the first backward each
// parameter's grad() is a view into its bucket (PyTorch's gradient_as_bucket_view): backward
// accumulates into the bucket and the all-reduce works on it in place, without copies.
// zero_grad(set_to_none = false) keeps the views; the default (set_to_none) drops them and
// the next backward copies each gradient into its bucket once and restores them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ignis/distributed.h"
#include "ignis/nn/conv.h"
#include "ignis/nn/module.h"

namespace ignis::nn {

struct DistributedDataParallelOptions {
  /// Bucket size in MiB (PyTorch's bucket_cap_mb); a larger parameter gets a bucket alone.
  double bucket_cap_mb = 25;
  /// Mark parameters the forward did not use as ready (zero gradient) so their buckets still
  /// reduce; costs a walk of the autograd graph per forward. Without it, a parameter with no
  /// gradient makes the next forward throw, naming it (it never hangs).
  bool find_unused_parameters = false;
  /// Copy rank 0's buffers (BatchNorm running statistics) to every rank before each forward.
  bool broadcast_buffers = true;
  /// The group to train over; the default group when null.
  std::shared_ptr<distributed::ProcessGroup> process_group;
  /// Starts the reduction of one bucket (its local gradients, concatenated) and returns its
  /// Work; when that completes, `bucket` must hold the gradients to use, averaged over the
  /// ranks (PyTorch's register_comm_hook: compression, logging), best in place: the
  /// parameters' grad() are views of it (a hook that puts another tensor into `bucket` costs
  /// a copy back). Default: each gradient is scaled by 1 / world_size as it enters the
  /// bucket and the bucket is all-reduced with Sum, asynchronously.
  std::function<distributed::WorkPtr(distributed::ProcessGroup&, Tensor& bucket)> comm_hook;
};

namespace detail {
class Reducer;
}

/// Wraps `module` (registered as its child "module", so state-dict keys get PyTorch's "module."
/// prefix). Construction broadcasts rank 0's parameters and buffers, and is collective: every
/// rank must construct it. Parameters are bucketed in reverse registration order (the order
/// backward produces their gradients). Move the module to its device (module.to()) before
/// wrapping it: the wrapper hooks the parameter tensors it finds at construction.
class DistributedDataParallel : public Module {
 public:
  explicit DistributedDataParallel(Module& module, DistributedDataParallelOptions options = {});
  ~DistributedDataParallel() override;

  /// Broadcasts buffers (broadcast_buffers), runs module.forward(x) and, when grad is
  /// enabled, prepares the gradient reduction of the coming backward.
  Tensor forward(const Tensor& x) override;
  Module& module() { return module_; }

  /// While alive, backward accumulates gradients locally without communicating (gradient
  /// accumulation); the first backward after it averages the accumulated gradients.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool prev_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /// The parameter names of each bucket, in bucket order (for inspection and tests).
  std::vector<std::vector<std::string>> bucket_parameter_names() const;
  /// The slice of its bucket's flat buffer that trainable parameter `name` (a name of
  /// module().named_parameters()) has as its gradient; after a synchronised backward its
  /// grad() is this view (for inspection and tests). Throws ValueError for an unknown name.
  Tensor gradient_bucket_view(const std::string& name) const;
  /// Gradient bytes the last synchronised backward copied into the buckets: those whose
  /// kernel did not write them there (already averaged) and that were not accumulated into
  /// their bucket view. 0 when every gradient was written in place (for performance checks).
  int64_t copied_gradient_bytes() const;

 private:
  Module& module_;
  DistributedDataParallelOptions options_;
  std::vector<std::string> trainable_names_;  // in the Reducer's parameter order
  std::shared_ptr<detail::Reducer> reducer_;
};

/// Batch normalisation whose training-mode statistics are those of the batches of all ranks
/// together (PyTorch's SyncBatchNorm): the mean and variance are all-reduced in forward, and
/// backward all-reduces the two per-channel gradient sums the input gradient needs, so each
/// rank's outputs and gradients equal those of one BatchNorm over the concatenated batch
/// (weight and bias gradients summed over the ranks, as DDP does before averaging). Running
/// statistics are updated identically on every rank. Inputs [N, C] to [N, C, D, H, W]; the
/// ranks' batch sizes may differ. Every forward in training mode is a collective of `group`
/// (default: a duplicate of the default group, so its collectives never mix with DDP's).
/// Eval mode uses the running statistics and communicates nothing.
class SyncBatchNorm : public BatchNorm {
 public:
  explicit SyncBatchNorm(int64_t num_features, const BatchNormConfig& config = {},
                         std::shared_ptr<distributed::ProcessGroup> group = nullptr);
  SyncBatchNorm(Module* parent, std::string name, int64_t num_features,
                const BatchNormConfig& config = {},
                std::shared_ptr<distributed::ProcessGroup> group = nullptr);
};

/// Makes every BatchNorm in the tree under `root` synchronise over `group` (default: one
/// duplicate of the default group, shared by all of them) — PyTorch's convert_sync_batchnorm.
/// Modules are members of their parents here (Note [Module registration by pointer]), so the
/// BatchNorm objects are kept and given the group rather than replaced; their parameters,
/// buffers and state-dict keys are unchanged. Returns how many were converted. Call it on
/// every rank before wrapping the model in DistributedDataParallel.
int64_t convert_sync_batchnorm(Module& root,
                               std::shared_ptr<distributed::ProcessGroup> group = nullptr);

}  // namespace ignis::nn
