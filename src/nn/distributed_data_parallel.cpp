// DistributedDataParallel and its Reducer: gradient buckets, the post-accumulate hooks that
// fill them during backward, and the asynchronous all-reduce of each bucket.
//
// Note [DDP bucket order]: every rank must start the buckets' all-reduces in the same order,
// or the collectives pair up wrongly. Buckets are launched strictly in bucket index order: a
// bucket whose gradients are all ready waits for the buckets before it. Since buckets hold the
// parameters in reverse registration order, the first buckets are usually the first ready.
// When the last bucket has been launched (inside the last gradient hook of backward) the
// Reducer waits for all of them, so the gradients are final when backward() returns.
//
// Note [DDP gradients as bucket views]: each bucket owns one flat buffer, and each parameter's
// grad() is a view of its slice of it (PyTorch's gradient_as_bucket_view). Autograd adds a
// gradient into an existing grad() in place (AccumulateGrad outside create_graph), so once
// grad() is the view, backward writes straight into the bucket, the all-reduce runs on the
// buffer in place and nothing is copied out. grad() stops being the view when something
// replaces the tensor: zero_grad(set_to_none = true) (the default), an optimizer or a scaler
// that assigns a new one, a create_graph backward. When its gradient is ready the Reducer
// then copies it into the slice (one pass, as the first backward does) and makes grad() the
// view again; zero_grad(set_to_none = false) keeps the views and avoids that copy. Better
// still, forward names each parameter's slice, with the averaging's 1 / world_size, as its
// gradient destination (Note [Gradient destinations]): a gradient computed by a kernel that
// takes the offer (a convolution's weight gradient, a product's) is then written into the
// bucket already scaled, and neither copied nor scaled afterwards; only the gradients of other
// ops are copied. copied_gradient_bytes() counts what the last backward copied.
//
// Note [DDP averaging before the sum]: without a comm_hook the Reducer multiplies each
// gradient by 1 / world_size as it enters the bucket (in the kernel that writes it there, in
// the same pass as the copy, or on the slice the hook has just accumulated into, while it is
// in cache) and the all-reduce sums:
// no pass over the whole bucket after the collective. The result is the average up to the
// rounding of the products (exact for a power-of-two world size). A comm_hook receives the
// plain local gradients, as its contract says.
#include "ignis/nn/parallel.h"

#include <unordered_set>

#include <fmt/format.h>

#include "autograd/node.h"
#include "core/shape.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"
#include "ops/elementwise.h"

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
    views_.reserve(params_.size());
    for (size_t k = 0; k < params_.size(); ++k) {
      const Tensor& p = params_[k].second;
      const Tensor& flat = buckets_[bucket_of_[k]].flat;
      views_.push_back(flat.narrow(0, offset_of_[k], p.numel()).view(p.sizes()));
    }
    // Note [DDP averaging before the sum]
    if (!comm_hook_ && group_.size() > 1) prescale_ = 1.0 / group_.size();
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
    offered_.assign(params_.size(), false);
    copied_bytes_ = 0;
    for (Bucket& b : buckets_) {
      b.pending = int64_t(b.params.size());
      b.work.reset();
    }
    next_launch_ = 0;
    if (find_unused_) mark_unused_ready(output);
    offer_destinations();
  }

  void disarm() {
    armed_ = false;
    withdraw_destinations();
  }

  ~Reducer() { withdraw_destinations(); }

  /// The post-accumulate hook of parameter k.
  void on_grad_ready(size_t k) {
    if (!armed_) return;
    if (ready_[k])
      throw DistributedError(fail_message(fmt::format(
          "parameter {} received a gradient twice in one backward (reused across two "
          "backward passes of one forward?); DDP reduces each gradient once per forward",
          params_[k].first)));
    mark_ready(k);
  }

  /// The bucket slice that is parameter k's gradient (for inspection and tests).
  const Tensor& bucket_view(size_t k) const { return views_[k]; }
  int64_t copied_bytes() const { return copied_bytes_; }

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
    Tensor flat;  // the gradients of params, concatenated (contiguous); their grad() views it
    Tensor hooked;  // what the comm_hook was given: it may put another tensor there
    int64_t pending = 0;
    distributed::WorkPtr work;
  };

  bool is_bucket_view(const Tensor& g, size_t k) const {
    const Tensor& v = views_[k];
    return g.defined() && g.device() == v.device() && g.dtype() == v.dtype() &&
           g.data_ptr() == v.data_ptr() && g.sizes() == v.sizes() && g.is_contiguous();
  }

  // Puts parameter k's gradient (scaled, Note [DDP averaging before the sum]) into its slice
  // and makes grad() the slice (Note [DDP gradients as bucket views]). An undefined gradient
  // contributes zeros and stays undefined until finish() knows whether any rank had one.
  void mark_ready(size_t k) {
    NoGradGuard no_grad;
    ready_[k] = true;
    Tensor& g = params_[k].second.mutable_grad();
    Tensor& view = views_[k];
    has_grad_[k] = g.defined();
    if (!g.defined()) {
      view.zero_();
    } else if (is_bucket_view(g, k)) {
      // Written there by its kernel, already scaled, when the engine used the destination up;
      // else accumulated into the view in place.
      const bool written = offered_[k] && !destination_of(k).tensor.defined();
      if (prescale_ != 1 && !written) view.mul_(prescale_);
    } else {
      copied_bytes_ += g.nbytes();
      if (prescale_ != 1)
        ignis::detail::binary_op(g, Scalar(prescale_), kernels::BinaryOp::mul,
                                 kernels::BinaryKind::Arithmetic, "mul", {}, &view);
      else
        view.copy_(g);
      g = view;
    }
    Bucket& b = buckets_[bucket_of_[k]];
    if (--b.pending == 0) launch_ready_buckets();
  }

  // Note [DDP gradients as bucket views]: each contiguous parameter (the slices are
  // contiguous) gets its slice and the averaging's factor as the destination of its coming
  // gradient; the engine uses it only if grad() is still undefined when backward reaches the
  // parameter (and uses it up then).
  void offer_destinations() {
    for (size_t k = 0; k < params_.size(); ++k) {
      const Tensor& p = params_[k].second;
      if (ready_[k] || !p.is_contiguous()) continue;
      destination_of(k) = {views_[k], prescale_};
      offered_[k] = true;
    }
  }
  void withdraw_destinations() {
    for (auto& [name, p] : params_)
      if (auto* m = ignis::detail::autograd_meta_if(p)) m->grad_destination = {};
  }
  ignis::detail::GradientDestination& destination_of(size_t k) {
    return ignis::detail::autograd_meta(params_[k].second).grad_destination;
  }

  void launch_ready_buckets() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      Bucket& b = buckets_[next_launch_++];
      b.hooked = b.flat;
      // Sum: the gradients were scaled as they entered (Note [DDP averaging before the sum]).
      b.work = comm_hook_ ? comm_hook_(group_, b.hooked)
                          : group_.all_reduce(b.flat, distributed::ReduceOp::Sum, /*async_op=*/true);
    }
    if (next_launch_ == buckets_.size()) finish();
  }

  // Every bucket is in flight: wait for each. The averages are already in the buckets, which
  // grad() views; a parameter without a local gradient gets the view if another rank had one.
  void finish() {
    NoGradGuard no_grad;
    std::vector<uint8_t> used_anywhere = used_on_any_rank();
    for (Bucket& b : buckets_) {
      b.work->wait();
      if (b.hooked.impl() != b.flat.impl()) b.flat.copy_(b.hooked);  // the hook's own tensor
      b.hooked = Tensor();
      for (size_t k : b.params)
        if (used_anywhere[k] && !has_grad_[k]) params_[k].second.mutable_grad() = views_[k];
      // else, as PyTorch, a gradient no rank produced stays undefined
    }
    armed_ = false;
    withdraw_destinations();
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
    withdraw_destinations();
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
      if (!reached.count(params_[k].second.impl())) mark_ready(k);
  }

  std::vector<std::pair<std::string, Tensor>> params_;
  distributed::ProcessGroup& group_;
  bool find_unused_;
  std::function<distributed::WorkPtr(distributed::ProcessGroup&, Tensor&)> comm_hook_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<int64_t> offset_of_;
  std::vector<Tensor> views_;  // parameter k's slice of its bucket, shaped like the parameter
  double prescale_ = 1;        // what a gradient is multiplied by as it enters its bucket
  std::vector<bool> ready_;
  std::vector<uint8_t> has_grad_;  // whether parameter k had a gradient when it became ready
  std::vector<bool> offered_;      // whether parameter k was offered its slice as destination
  int64_t copied_bytes_ = 0;       // gradient bytes copied into the buckets in this backward
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
    if (p.requires_grad()) {
      trainable.emplace_back(name, p);
      trainable_names_.push_back(name);
    }
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

int64_t DistributedDataParallel::copied_gradient_bytes() const {
  return reducer_->copied_bytes();
}

Tensor DistributedDataParallel::gradient_bucket_view(const std::string& name) const {
  for (size_t k = 0; k < trainable_names_.size(); ++k)
    if (trainable_names_[k] == name) return reducer_->bucket_view(k);
  throw ValueError(fmt::format(
      "[DistributedDataParallel] gradient_bucket_view: no trainable parameter named '{}'", name));
}

}  // namespace ignis::nn
