// Graph nodes. A Node turns the gradients of its outputs into gradients of its inputs and
// knows where each of those flows next (next_edges). Ops create FunctionNodes through
// record() (src/autograd/record.h); leaves get an AccumulateGrad node.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/meta.h"

namespace ignis::detail {

/// A tensor kept for backward, with the storage version it had when saved
/// (Note [Version counter]). Outputs of the node itself are stored without their autograd
/// state (which points back to the node: a cycle) and get it back when unpacked.
struct SavedTensor {
  Tensor data;  // detached when is_output
  uint64_t version = 0;
  bool is_output = false;
  uint32_t output_nr = 0;
  bool requires_grad = false;
};

struct Node : std::enable_shared_from_this<Node> {
  std::vector<Edge> next_edges;  // one per input of the op (invalid when it needs no grad)
  uint32_t num_outputs = 1;
  uint64_t sequence_nr = 0;      // creation order: later nodes run first when both are ready
  bool accumulates_into_leaf = false;  // an AccumulateGrad (the engine asks for every node)
  /// Hooks on the gradient of output i (register_hook on a non-leaf tensor), with their ids,
  /// then the metas that retain_grad() asked to receive that gradient (run after the hooks).
  std::vector<std::vector<std::pair<int64_t, std::function<Tensor(const Tensor&)>>>> pre_hooks;
  std::vector<std::vector<std::weak_ptr<AutogradMeta>>> retained;

  Node();
  virtual ~Node() = default;
  virtual const char* name() const = 0;
  /// Input gradients (one per next edge; undefined where none) from output gradients
  /// (one per output; undefined where no gradient arrived: treat as zero).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  /// Drops what backward needed (called after backward unless the graph is retained).
  virtual void release() {}
};

/// The node of a recorded op: its backward is a function of the output gradients and the
/// saved tensors, written with ignis ops.
using BackwardFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& grads, const std::vector<Tensor>& saved)>;

struct FunctionNode final : Node {
  const char* op;
  BackwardFn backward;
  std::vector<SavedTensor> saved;
  bool released = false;
  /// What an input's gradient must be: reduced (sum_to) to its shape and cast to its dtype.
  struct InputMeta {
    Shape shape;
    DType dtype = kFloat32;
  };
  /// What an output's gradient is when none arrives: zeros of this shape, dtype and device.
  struct OutputMeta {
    Shape shape;
    DType dtype = kFloat32;
    Device device;
  };
  std::vector<InputMeta> inputs;    // one per next edge
  std::vector<OutputMeta> outputs;  // one per output

  const char* name() const override { return op; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  void release() override {
    saved.clear();
    backward = nullptr;
    released = true;
  }
};

/// Adds incoming gradients into a leaf's grad().
struct AccumulateGrad final : Node {
  Tensor leaf;  // keeps the leaf's TensorImpl (its meta points here only weakly)
  explicit AccumulateGrad(Tensor t) : leaf(std::move(t)) { accumulates_into_leaf = true; }
  const char* name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
};

/// How many gradients detect_anomaly has checked in this process (the tests use it to show
/// that nothing is checked while anomaly mode is off).
uint64_t anomaly_checks();

/// Inside a backward function: the destination the engine offers for the gradient of input
/// `input` (Note [Gradient destinations]), or null. A backward that takes the offer writes
/// the whole gradient, multiplied by the offer's scale, into its tensor and returns that same
/// tensor (the same TensorImpl, not a view of it).
const GradientDestination* gradient_destination(size_t input);

/// The edge a gradient of t flows into: its grad_fn, or its leaf accumulator, or none.
Edge gradient_edge(const Tensor& t);

}  // namespace ignis::detail
