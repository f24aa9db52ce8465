// DistributedDataParallel and its Reducer: gradient buckets, the post-accumulate hooks that
// fill them during backward, and the asynchronous averaging all-reduce of each bucket.
//
// Note [DDP bucket order]: every rank must start the buckets' all-reduces in the same order,
// or the collectives pair up wrongly. Buckets are launched strictly in bucket index order: a
// bucket whose gradients are all ready waits for the buckets before it. Since buckets hold the
// parameters in reverse registration order, the first buckets are usually the first ready.
// When the last bucket has been launched (inside the last gradient hook of backward) the
// Reducer waits for all of them and writes the averaged gradients back into the parameters'
// grad(), so they are final when backward() returns.
#include "ignis/nn/parallel.h"

#include <unordered_set>

#include <fmt/format.h>

#include "autograd/node.h"
#include "core/shape.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"

namespace ignis::nn {
namespace detail {

using distributed::DistributedError;

class Reducer {
 public:
  Reducer(std::vector<std::pair<std::string, Tensor>> params, const DistributedDataParallelOptions& o,
          distributed::ProcessGroup& group)
      : params_(std::move(params)), group_(group), find_unused_(o.find_unused_parameters),
        comm_hook_(o.comm_hook) {
    // Note [DDP bucket order]: reverse registration order, split by cap, dtype and device.
    const auto cap = int64_t(o.bucket_cap_mb * 1024 * 1024);
    bucket_of_.assign(params_.size(), 0);
    offset_of_.assign(params_.size(), 0);
    int64_t bytes = 0;
    for (size_t k = params_.size(); k-- > 0;) {
      const Tensor& p = params_[k].second;
      bool fresh = buckets_.empty() || bytes + p.nbytes() > cap ||
                   buckets_.back().flat_dtype != p.dtype() ||
                   buckets_.back().flat_device != p.device();
      if (fresh) {
        buckets_.push_back({});
        buckets_.back().flat_dtype = p.dtype();
        buckets_.back().flat_device = p.device();
        bytes = 0;
      }
      Bucket& b = buckets_.back();
      bucket_of_[k] = buckets_.size() - 1;
      offset_of_[k] = b.numel;
      b.params.push_back(k);
      b.numel += p.numel();
      bytes += p.nbytes();
    }
    for (Bucket& b : buckets_) b.flat = zeros({b.numel}, {b.flat_dtype, b.flat_device});
  }

  std::string fail_message(const std::string& what) const {
    return fmt::format("[DistributedDataParallel] rank {} of {}: {}", group_.rank(), group_.size(),
                       what);
  }

  /// Called by forward: checks that the previous backward finished its reduction and arms the
  /// hooks for the coming one.
  void prepare(const Tensor& output) {
    check_previous_finished();
    armed_ = true;
    ready_.assign(params_.size(), false);
    has_grad_.assign(params_.size(), 0);
    for (Bucket& b : buckets_) {
      b.pending = int64_t(b.params.size());
      b.work.reset();
    }
    next_launch_ = 0;
    if (find_unused_) mark_unused_ready(output);
  }

  void disarm() { armed_ = false; }

  /// The post-accumulate hook of parameter k.
  void on_grad_ready(size_t k) {
    if (!armed_) return;
    if (ready_[k])
      throw DistributedError(fail_message(fmt::format(
          "parameter {} received a gradient twice in one backward (reused across two "
          "backward passes of one forward?); DDP reduces each gradient once per forward",
          params_[k].first)));
    mark_ready(k, params_[k].second.grad());
  }

  std::vector<std::vector<std::string>> bucket_names() const {
    std::vector<std::vector<std::string>> out;
    for (const Bucket& b : buckets_) {
      out.emplace_back();
      for (size_t k : b.params) out.back().push_back(params_[k].first);
    }
    return out;
  }

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_, in bucket order
    int64_t numel = 0;
    DType flat_dtype = kFloat32;
    Device flat_device;
    Tensor flat;  // the gradients of params, concatenated (contiguous)
    int64_t pending = 0;
    distributed::WorkPtr work;
  };

  Tensor slice(const Bucket& b, size_t k) const {
    const Tensor& p = params_[k].second;
    return b.flat.narrow(0, offset_of_[k], p.numel()).view(p.sizes());
  }

  void mark_ready(size_t k, const Tensor& grad) {
    NoGradGuard no_grad;
    ready_[k] = true;
    has_grad_[k] = grad.defined();
    Bucket& b = buckets_[bucket_of_[k]];
    Tensor dst = slice(b, k);
    if (grad.defined())
      dst.copy_(grad);
    else
      dst.zero_();
    if (--b.pending == 0) launch_ready_buckets();
  }

  void launch_ready_buckets() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      Bucket& b = buckets_[next_launch_++];
      b.work = comm_hook_ ? comm_hook_(group_, b.flat)
                          : group_.all_reduce(b.flat, distributed::ReduceOp::Avg, /*async_op=*/true);
    }
    if (next_launch_ == buckets_.size()) finish();
  }

  // Every bucket is in flight: wait for each and write the averages into grad().
  void finish() {
    NoGradGuard no_grad;
    std::vector<uint8_t> used_anywhere = used_on_any_rank();
    for (Bucket& b : buckets_) {
      b.work->wait();
      for (size_t k : b.params) {
        if (!used_anywhere[k]) continue;  // as PyTorch: grad() left as it was
        Tensor& g = params_[k].second.mutable_grad();
        if (g.defined())
          g.copy_(slice(b, k));
        else
          g = slice(b, k).clone();
      }
    }
    armed_ = false;
  }

  // Note [DDP unused parameters]: with find_unused_parameters, a parameter no rank produced a
  // gradient for keeps its grad() as it was (undefined, as in single-process training, so an
  // optimizer skips it) instead of getting a zero gradient that weight decay or momentum would
  // act on. Costs one small all-reduce (a byte per parameter) per backward, after the buckets.
  std::vector<uint8_t> used_on_any_rank() {
    std::vector<uint8_t> used(params_.size(), 1);
    if (!find_unused_) return used;
    Tensor flags = empty({int64_t(params_.size())}, kUInt8);
    for (size_t k = 0; k < params_.size(); ++k) flags.data_ptr<uint8_t>()[k] = has_grad_[k];
    group_.all_reduce(flags, distributed::ReduceOp::Max);
    for (size_t k = 0; k < params_.size(); ++k) used[k] = flags.data_ptr<uint8_t>()[k];
    return used;
  }

  void check_previous_finished() {
    if (!armed_) return;
    std::vector<std::string> missing;
    size_t done = 0;
    for (size_t k = 0; k < params_.size(); ++k) {
      if (ready_[k])
        ++done;
      else
        missing.push_back(params_[k].first);
    }
    armed_ = false;
    if (done == 0) return;  // no backward ran since the last forward: nothing to finish
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
    throw DistributedError(fail_message(fmt::format(
        "the previous backward produced no gradient for {} (not used by forward?); its "
        "bucket could not be reduced. Pass find_unused_parameters = true, or use every "
        "parameter in forward",
        names)));
  }

  // Parameters whose AccumulateGrad node the output's graph does not reach get no gradient
  // in this backward: they count as ready now, contributing what grad() already holds
  // (gradients accumulated under no_sync) or zeros.
  void mark_unused_ready(const Tensor& output) {
    std::unordered_set<const ignis::detail::TensorImpl*> reached;
    std::unordered_set<const ignis::detail::Node*> seen;
    std::vector<std::shared_ptr<ignis::detail::Node>> stack;
    if (auto* m = ignis::detail::autograd_meta_if(output); m && m->grad_fn)
      stack.push_back(m->grad_fn);
    while (!stack.empty()) {
      auto node = std::move(stack.back());
      stack.pop_back();
      if (!seen.insert(node.get()).second) continue;
      if (auto* acc = dynamic_cast<ignis::detail::AccumulateGrad*>(node.get()))
        reached.insert(acc->leaf.impl());
      for (const auto& e : node->next_edges)
        if (e.fn) stack.push_back(e.fn);
    }
    for (size_t k = 0; k < params_.size(); ++k)
      if (!reached.count(params_[k].second.impl())) mark_ready(k, params_[k].second.grad());
  }

  std::vector<std::pair<std::string, Tensor>> params_;
  distributed::ProcessGroup& group_;
  bool find_unused_;
  std::function<distributed::WorkPtr(distributed::ProcessGroup&, Tensor&)> comm_hook_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<int64_t> offset_of_;
  std::vector<bool> ready_;
  std::vector<uint8_t> has_grad_;  // whether parameter k had a gradient when it became ready
  size_t next_launch_ = 0;
  bool armed_ = false;

 public:
  bool sync = true;
};

}  // namespace detail

namespace {
distributed::ProcessGroup& group_of(const DistributedDataParallelOptions& o) {
  return o.process_group ? *o.process_group : distributed::default_group();
}
}  // namespace

DistributedDataParallel::DistributedDataParallel(Module& module,
                                                 DistributedDataParallelOptions options)
    : module_(module), options_(std::move(options)) {
  register_module("module", &module_);
  auto& group = group_of(options_);
  {
    // Every replica starts from rank 0's weights and statistics.
    NoGradGuard no_grad;
    for (Tensor t : module_.parameters()) group.broadcast(t, 0);
    for (Tensor t : module_.buffers()) group.broadcast(t, 0);
  }
  std::vector<std::pair<std::string, Tensor>> trainable;
  for (auto& [name, p] : module_.named_parameters())
    if (p.requires_grad()) trainable.emplace_back(name, p);
  reducer_ = std::make_shared<detail::Reducer>(trainable, options_, group);
  // The hooks outlive this wrapper (they cannot be removed): they hold it weakly.
  std::weak_ptr<detail::Reducer> weak = reducer_;
  for (size_t k = 0; k < trainable.size(); ++k)
    autograd::register_post_accumulate_grad_hook(trainable[k].second, [weak, k](Tensor&) {
      if (auto r = weak.lock()) r->on_grad_ready(k);
    });
}

DistributedDataParallel::~DistributedDataParallel() = default;

Tensor DistributedDataParallel::forward(const Tensor& x) {
  auto& group = group_of(options_);
  if (options_.broadcast_buffers && group.size() > 1) {
    NoGradGuard no_grad;
    for (Tensor t : module_.buffers()) group.broadcast(t, 0);
  }
  Tensor out = module_.forward(x);
  if (reducer_->sync && is_grad_enabled() && out.requires_grad())
    reducer_->prepare(out);
  else
    reducer_->disarm();
  return out;
}

DistributedDataParallel::NoSyncGuard::NoSyncGuard(DistributedDataParallel& ddp)
    : ddp_(ddp), prev_(ddp.reducer_->sync) {
  ddp_.reducer_->sync = false;
}
DistributedDataParallel::NoSyncGuard::~NoSyncGuard() { ddp_.reducer_->sync = prev_; }

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_parameter_names() const {
  return reducer_->bucket_names();
}

}  // namespace ignis::nn
