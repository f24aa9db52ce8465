// Per-tensor autograd state (AutogradMeta) and the graph node interface. A TensorImpl gets a
// meta the first time it requires grad or is produced by a recorded op.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor_impl.h"

namespace ignis::detail {

struct Node;

/// Where a gradient flows: input slot `input_nr` of node `fn`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

/// A tensor a leaf's gradient may be written into, multiplied by `scale` (Note [Gradient
/// destinations], src/autograd/engine.cpp).
struct GradientDestination {
  Tensor tensor;
  double scale = 1;
};

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;         // which output of grad_fn this tensor is
  bool retains_grad = false;
  bool is_differentiable_view = false;  // made by a recorded view op (see record.h)
  int64_t next_hook_id = 0;
  std::vector<std::pair<int64_t, std::function<Tensor(const Tensor&)>>> hooks;
  std::vector<std::function<void(Tensor&)>> post_accumulate_hooks;
  std::weak_ptr<Node> grad_accumulator;  // the AccumulateGrad node of a leaf, made lazily
  /// Where a leaf's first gradient of a backward may be written (Note [Gradient destinations]).
  GradientDestination grad_destination;
};

/// The meta of t, created on first use.
AutogradMeta& autograd_meta(const Tensor& t);
/// The meta of t or null.
inline AutogradMeta* autograd_meta_if(const Tensor& t) {
  return t.defined() ? t.impl()->autograd.get() : nullptr;
}

}  // namespace ignis::detail
