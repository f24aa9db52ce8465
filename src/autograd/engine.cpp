// The backward engine: from the roots' gradient edges, count how many gradients each node
// waits for, then run nodes as their inputs complete (latest-created first), summing
// gradients per input slot, and accumulate into leaves (or capture for autograd::grad).
#include <queue>
#include <unordered_map>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "core/error.h"
#include "core/memory_format.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"

namespace ignis::detail {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};

/// Where autograd::grad wants a gradient: input slot `slot` of `node`, or a leaf.
struct Capture {
  Node* node;
  uint32_t slot;
  size_t index;
};

struct GraphTask {
  bool keep_graph = false;
  bool create_graph = false;
  bool accumulate = true;  // false for autograd::grad: no .grad() is touched
  std::vector<Capture> captures;
  std::vector<Tensor> captured;
};

void add_into(Tensor& slot, const Tensor& g) {
  if (!g.defined()) return;
  slot = slot.defined() ? add(slot, g) : g;
}

Tensor run_pre_hooks(Node& node, uint32_t slot, Tensor grad) {
  if (!grad.defined()) return grad;
  if (slot < node.pre_hooks.size())
    for (auto& [id, hook] : node.pre_hooks[slot]) {
      Tensor r = hook(grad);
      if (r.defined()) grad = r;
    }
  if (slot < node.retained.size())
    for (auto& weak : node.retained[slot])
      if (auto meta = weak.lock()) meta->grad = meta->grad.defined() ? add(meta->grad, grad) : grad.detach();
  return grad;
}

std::atomic<uint64_t> g_anomaly_checks{0};

// detect_anomaly: every gradient node produced must be finite. The check runs with grad mode
// off (it must not become part of a create_graph graph) and names the node, the input the bad
// gradient is for and the op that created that input, which is where to look.
void check_anomaly(const Node& node, const std::vector<Tensor>& in_grads) {
  GradModeScope no_grad(false);
  for (size_t i = 0; i < in_grads.size() && i < node.next_edges.size(); ++i) {
    const Tensor& g = in_grads[i];
    const Edge& e = node.next_edges[i];
    // A gradient nobody receives (an input that needs none) cannot spoil anything.
    if (!g.defined() || !e.valid() || !is_floating(g.dtype())) continue;
    g_anomaly_checks.fetch_add(1, std::memory_order_relaxed);
    if (all(isfinite(g)).item<bool>()) continue;
    const char* what = any(isnan(g)).item<bool>() ? "nan" : "inf";
    const std::string source = e.fn->accumulates_into_leaf
                                   ? std::string("a leaf tensor")
                                   : fmt::format("the forward op '{}'", e.fn->name());
    throw ValueError(fmt::format(
        "[backward] detect_anomaly: the backward of '{}' returned {} in its gradient {} (shape "
        "{}, {}); that input was created by {}",
        node.name(), what, i, shape_str(g.sizes()), dtype_name(g.dtype()), source));
  }
}

/// What the engine keeps for one node reachable from the roots: one map entry per node (four
/// maps cost four allocations per node, a measurable share of a small model's step).
struct NodeState {
  int deps = 0;                 // gradients still to arrive; -1 once queued
  std::vector<Tensor> buffer;   // the gradients for its outputs, summed per slot
  std::shared_ptr<Node> alive;  // keeps a node with pending gradients (and its address) alive
};

/// The NodeStates of one backward, found by node address: by a linear search while the graph
/// is small (a training step of a small model has about ten nodes, and hashing and one map
/// node per entry cost more than the search), through a hash index beyond kLinear nodes.
/// Every node is added by the dependency pass before any gradient flows, so the references
/// handed out afterwards stay valid.
class NodeStates {
 public:
  NodeStates() {
    nodes_.reserve(kLinear);
    states_.reserve(kLinear);
  }
  /// The state of n, created (zero dependencies, no gradients) when n is new; *added says so.
  NodeState& get(Node* n, bool* added = nullptr) {
    size_t i = index_of(n);
    const bool fresh = i == kNone;
    if (fresh) i = add(n);
    if (added) *added = fresh;
    return states_[i];
  }
  NodeState& operator[](Node* n) { return get(n); }

 private:
  static constexpr size_t kLinear = 32;
  static constexpr size_t kNone = ~size_t(0);
  size_t index_of(Node* n) const {
    if (nodes_.size() <= kLinear) {
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i] == n) return i;
      return kNone;
    }
    const auto it = index_.find(n);
    return it == index_.end() ? kNone : it->second;
  }
  size_t add(Node* n) {
    nodes_.push_back(n);
    states_.emplace_back();
    if (nodes_.size() == kLinear + 1) {  // from here on, the hash index
      index_.reserve(4 * kLinear);
      for (size_t i = 0; i < nodes_.size(); ++i) index_.emplace(nodes_[i], i);
    } else if (nodes_.size() > kLinear + 1) {
      index_.emplace(n, nodes_.size() - 1);
    }
    return nodes_.size() - 1;
  }
  std::vector<Node*> nodes_;
  std::vector<NodeState> states_;
  std::unordered_map<Node*, size_t> index_;
};

// Note [Gradient layout follows the leaf]
// A leaf's grad() takes the leaf's strides when the leaf is dense (a channels-last conv
// weight gets a channels-last gradient, as PyTorch's AccumulateGrad does), and is contiguous
// otherwise, so optimizers update parameter, gradient and state in one memory order.
bool has_leaf_layout(const Tensor& g, const Tensor& leaf) {
  if (is_non_overlapping_and_dense(leaf.sizes(), leaf.strides()))
    return g.strides() == leaf.strides() || (g.is_contiguous() && leaf.is_contiguous());
  return g.is_contiguous();
}
Tensor leaf_layout_copy(const Tensor& g, const Tensor& leaf) {
  Tensor out = is_non_overlapping_and_dense(leaf.sizes(), leaf.strides())
                   ? make_tensor_preserving(leaf, g.dtype(), g.device())
                   : make_tensor(g.sizes(), g.dtype(), g.device());
  return out.copy_(g);  // recorded when g takes part in autograd (create_graph)
}

// Note [Gradient destinations]
// A leaf can name a tensor that its first gradient of a backward may be written into, times a
// scale (AutogradMeta::grad_destination): DistributedDataParallel names the leaf's slice of
// its gradient bucket and 1 / world_size, so the kernel that computes a weight gradient
// writes the averaging's share straight into the bucket and nothing is copied or scaled
// there afterwards. The engine offers the destination to the node that produces the leaf's
// gradient (gradient_destination(i) inside its backward function) only when that gradient
// will become grad() as it is: the backward accumulates into grad() (not autograd::grad),
// records nothing (not create_graph), the leaf has no grad() yet, no gradient hooks (they must
// see the gradient as computed), no other gradient for it has arrived in this backward, and
// the destination has the leaf's sizes, dtype, device and layout (Note [Gradient layout
// follows the leaf]). A node may ignore the offer. AccumulateGrad keeps a gradient that is
// the destination (its storage is shared with the bucket, so it is not "unique") instead of
// copying it, and clears grad_destination: that the destination is gone tells its owner the
// gradient arrived written and scaled. A second gradient for the same leaf (a weight used
// twice) is added out of place by the engine, so the leaf then gets the sum in a new tensor
// and the destination stays unused.
thread_local const std::vector<GradientDestination>* t_destinations = nullptr;

bool fits_leaf(const Tensor& dest, const Tensor& leaf) {
  return dest.sizes() == leaf.sizes() && dest.dtype() == leaf.dtype() &&
         dest.device() == leaf.device() && has_leaf_layout(dest, leaf);
}

/// Offers a node the destinations of the leaves its gradients flow into, while it runs.
class DestinationOffer {
 public:
  DestinationOffer(const GraphTask& task, const Node& node, NodeStates& states)
      : previous_(t_destinations) {
    t_destinations = nullptr;
    if (!task.accumulate || task.create_graph) return;
    for (size_t i = 0; i < node.next_edges.size(); ++i) {
      const Edge& e = node.next_edges[i];
      if (!e.valid() || !e.fn->accumulates_into_leaf) continue;
      const Tensor& leaf = static_cast<const AccumulateGrad&>(*e.fn).leaf;
      const AutogradMeta* m = autograd_meta_if(leaf);
      if (!m || !m->grad_destination.tensor.defined() || m->grad.defined() || !m->hooks.empty())
        continue;
      const std::vector<Tensor>& arrived = states[e.fn.get()].buffer;
      const bool first = arrived.empty() || !arrived[0].defined();
      if (!first || !fits_leaf(m->grad_destination.tensor, leaf)) continue;
      offered_.resize(node.next_edges.size());
      offered_[i] = m->grad_destination;
    }
    if (!offered_.empty()) t_destinations = &offered_;
  }
  ~DestinationOffer() { t_destinations = previous_; }
  DestinationOffer(const DestinationOffer&) = delete;
  DestinationOffer& operator=(const DestinationOffer&) = delete;

 private:
  std::vector<GradientDestination> offered_;
  const std::vector<GradientDestination>* previous_;
};

void execute(GraphTask& task, const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads) {
  // Dependencies: how many edges point at each node reachable from the roots.
  NodeStates states;
  std::vector<Node*> stack;
  for (const Edge& e : roots) {
    if (!e.valid()) continue;
    bool added = false;
    states.get(e.fn.get(), &added);
    if (added) stack.push_back(e.fn.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      bool added = false;
      ++states.get(e.fn.get(), &added).deps;
      if (added) stack.push_back(e.fn.get());
    }
  }
  auto cmp = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(cmp)> ready(cmp);
  // The state of a node about to receive a gradient: its buffer sized, the node kept alive.
  auto receiving = [&](const std::shared_ptr<Node>& fn) -> NodeState& {
    NodeState& st = states[fn.get()];
    if (st.buffer.empty()) st.buffer.resize(fn->num_outputs);
    if (!st.alive) st.alive = fn;
    return st;
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) continue;
    add_into(receiving(roots[i].fn).buffer[roots[i].input_nr], root_grads[i]);
  }
  for (const Edge& e : roots) {
    if (!e.valid()) continue;
    int& deps = states[e.fn.get()].deps;
    if (deps == 0) {
      deps = -1;  // queued once
      ready.push(e.fn.get());
    }
  }

  GradModeScope mode(task.create_graph);
  // Backward formulas run in the dtypes their forward ops saved, even when backward() is
  // called inside an amp::autocast scope (as PyTorch documents): no op casts again here.
  AutocastApplied no_autocast;
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    // The state stays in the map (and keeps the node alive) until the end: a node freed now
    // could give its address to a node created by this backward (create_graph).
    std::vector<Tensor> grads = std::move(states[node].buffer);
    grads.resize(node->num_outputs);
    for (uint32_t i = 0; i < node->num_outputs; ++i) grads[i] = run_pre_hooks(*node, i, grads[i]);
    for (const Capture& c : task.captures)
      if (c.node == node) task.captured[c.index] = grads[c.slot];
    const bool is_leaf_node = node->accumulates_into_leaf;
    std::vector<Tensor> in_grads;
    if (!is_leaf_node || task.accumulate) {
      DestinationOffer offer(task, *node, states);
      in_grads = node->apply(std::move(grads));
    }
    if (autograd::is_anomaly_enabled()) check_anomaly(*node, in_grads);
    if (!task.keep_graph) node->release();
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      NodeState& st = receiving(e.fn);
      if (i < in_grads.size()) add_into(st.buffer[e.input_nr], in_grads[i]);
      if (--st.deps == 0) {
        st.deps = -1;
        ready.push(e.fn.get());
      }
    }
  }
}

std::vector<Tensor> root_gradients(const std::vector<Tensor>& outputs,
                                   const std::vector<Tensor>& grad_outputs, const char* op) {
  IGNIS_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError,
              "[{}] got {} gradients for {} outputs", op, grad_outputs.size(), outputs.size());
  std::vector<Tensor> grads(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    IGNIS_CHECK(out.requires_grad(), ValueError,
                "[{}] output {} does not require grad and has no grad_fn", op, i);
    if (!grad_outputs.empty() && grad_outputs[i].defined()) {
      IGNIS_CHECK(grad_outputs[i].sizes() == out.sizes(), ShapeError,
                  "[{}] gradient of shape {} given for an output of shape {}", op,
                  shape_str(grad_outputs[i].sizes()), shape_str(out.sizes()));
      grads[i] = grad_outputs[i].to(out.device(), out.dtype());
    } else {
      IGNIS_CHECK(out.numel() == 1, ValueError,
                  "[{}] a gradient can be created implicitly only for one-element outputs; "
                  "pass the gradient for this output of shape {}",
                  op, shape_str(out.sizes()));
      grads[i] = ones_like(out);
    }
  }
  return grads;
}
}  // namespace

const GradientDestination* gradient_destination(size_t input) {
  const std::vector<GradientDestination>* d = t_destinations;
  return d && input < d->size() && (*d)[input].tensor.defined() ? &(*d)[input] : nullptr;
}

uint64_t anomaly_checks() { return g_anomaly_checks.load(std::memory_order_relaxed); }

Node::Node() : sequence_nr(g_next_sequence_nr.fetch_add(1)) {}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  if (!m) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  auto acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  AutogradMeta& m = autograd_meta(leaf);
  for (auto& [id, hook] : m.hooks) {
    Tensor r = hook(g);
    if (r.defined()) g = r;
  }
  if (g.dtype() != leaf.dtype() || g.device() != leaf.device()) g = g.to(leaf.device(), leaf.dtype());
  if (!m.grad.defined()) {
    // Keep the incoming tensor when nothing else holds its storage and it is laid out as
    // the leaf (Note [Gradient layout follows the leaf]); else own a copy in that layout.
    // A gradient written into the leaf's destination is kept too, and the destination is
    // used up (Note [Gradient destinations]).
    const bool into_destination = g.impl() == m.grad_destination.tensor.impl();
    if (into_destination) m.grad_destination = {};
    const bool unique =
        into_destination || (g.impl()->storage.use_count() == 1 && has_leaf_layout(g, leaf));
    // (A gradient computed without grad mode has no history; detach() only when it carries
    // autograd state, e.g. a hook's result.)
    const auto plain = [](const Tensor& t) { return autograd_meta_if(t) ? t.detach() : t; };
    m.grad = is_grad_enabled() ? (unique ? g : leaf_layout_copy(g, leaf))
                               : (unique ? plain(g) : leaf_layout_copy(plain(g), leaf));
  } else if (is_grad_enabled()) {
    m.grad = add(m.grad, g);
  } else {
    m.grad.add_(g);
  }
  for (auto& hook : m.post_accumulate_hooks) hook(leaf);
  return {};
}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grads) {
  IGNIS_CHECK(!released, ValueError,
              "[backward] trying to run backward through the graph of {} a second time (its "
              "saved tensors were freed); pass retain_graph = true to the first backward",
              op);
  for (uint32_t i = 0; i < num_outputs; ++i)
    if (!grads[i].defined())
      grads[i] = zeros(outputs[i].shape, TensorOptions(outputs[i].dtype, outputs[i].device));
  std::vector<Tensor> unpacked;
  unpacked.reserve(saved.size());
  for (const SavedTensor& s : saved) {
    if (!s.data.defined()) {
      unpacked.emplace_back();
      continue;
    }
    IGNIS_CHECK(s.data.version() == s.version, ValueError,
                "[backward] a tensor saved by {} for its gradient was modified by an in-place "
                "operation (version {} when saved, {} now); clone() it before modifying it",
                op, s.version, s.data.version());
    // A saved output gets its history back (a new view whose grad_fn is this node) only when
    // the gradient is itself recorded (create_graph); otherwise its data is all backward reads.
    if (s.is_output && s.requires_grad && is_grad_enabled()) {
      Tensor t = make_view(s.data, s.data.sizes(), s.data.strides(), s.data.storage_offset());
      AutogradMeta& m = autograd_meta(t);
      m.grad_fn = shared_from_this();
      m.output_nr = s.output_nr;
      unpacked.push_back(std::move(t));
    } else {
      unpacked.push_back(s.data);
    }
  }
  std::vector<Tensor> in_grads = backward(grads, unpacked);
  IGNIS_CHECK(in_grads.size() == next_edges.size(), ValueError,
              "[backward of {}] internal: {} gradients for {} inputs", op, in_grads.size(),
              next_edges.size());
  // Broadcast inputs get the sum over their broadcast dims; promoted inputs their own dtype.
  for (size_t i = 0; i < in_grads.size(); ++i) {
    Tensor& g = in_grads[i];
    if (!g.defined() || !next_edges[i].valid()) continue;
    if (g.sizes() != inputs[i].shape) g = sum_to(g, inputs[i].shape);
    if (g.dtype() != inputs[i].dtype) g = g.to(inputs[i].dtype);
  }
  return in_grads;
}

void run_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                  bool keep_graph, bool create_graph) {
  GraphTask task;
  task.keep_graph = keep_graph || create_graph;
  task.create_graph = create_graph;
  std::vector<Tensor> grads = root_gradients(outputs, grad_outputs, "backward");
  std::vector<Edge> roots;
  for (const Tensor& o : outputs) roots.push_back(gradient_edge(o));
  execute(task, roots, grads);
}

}  // namespace ignis::detail

namespace ignis {

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  detail::run_backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                       retain_graph, create_graph);
}

namespace autograd {
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool create_graph, bool allow_unused) {
  using namespace detail;
  GraphTask task;
  task.keep_graph = retain_graph || create_graph;
  task.create_graph = create_graph;
  task.accumulate = false;
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    IGNIS_CHECK(inputs[i].requires_grad(), ValueError,
                "[autograd::grad] input {} does not require grad", i);
    Edge e = gradient_edge(inputs[i]);
    task.captures.push_back({e.fn.get(), e.input_nr, i});
  }
  // Keep the inputs' accumulators alive for the run (they are weakly held by the leaves).
  std::vector<Edge> keep;
  for (const Tensor& t : inputs) keep.push_back(gradient_edge(t));
  std::vector<Tensor> grads = root_gradients(outputs, grad_outputs, "autograd::grad");
  std::vector<Edge> roots;
  for (const Tensor& o : outputs) roots.push_back(gradient_edge(o));
  execute(task, roots, grads);
  for (size_t i = 0; i < inputs.size(); ++i)
    IGNIS_CHECK(allow_unused || task.captured[i].defined(), ValueError,
                "[autograd::grad] input {} was not used to compute the outputs; pass "
                "allow_unused = true to get an undefined gradient for it",
                i);
  return task.captured;
}
}  // namespace autograd
}  // namespace ignis
