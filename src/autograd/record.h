// How an op records itself for autograd, next to its forward (STYLE: "autograd in the op").
//
//   Tensor out = ...forward...;
//   if (needs_grad({&a, &b}))
//     record("mul", {out}, {a, b}, {save(a), save(b)},
//            [](const auto& g, const auto& s) { return grads{g[0] * s[1], g[0] * s[0]}; });
//
// Backward formulas are ignis ops, so they run on any device and can be differentiated again
// (create_graph). Gradients of broadcast inputs are reduced with sum_to.
#pragma once

#include <initializer_list>

#include "autograd/node.h"
#include "ignis/autograd.h"

namespace ignis::detail {

/// Sets grad mode for a scope (the engine runs backward with it on only for create_graph).
class GradModeScope {
 public:
  explicit GradModeScope(bool enabled) : prev_(is_grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeScope() { set_grad_enabled(prev_); }
  GradModeScope(const GradModeScope&) = delete;
  GradModeScope& operator=(const GradModeScope&) = delete;

 private:
  bool prev_;
};

/// True when grad mode is on and any of the tensors requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

/// An entry for record()'s saved list: an input (or any tensor) or one of the outputs.
struct SaveSpec {
  const Tensor* tensor;
  bool is_output;
};
inline SaveSpec save(const Tensor& t) { return {&t, false}; }
inline SaveSpec save_output(const Tensor& t) { return {&t, true}; }

/// Attaches a FunctionNode named op to outputs; its backward maps output gradients and the
/// unpacked saved tensors to one gradient per input (undefined for inputs without one).
void record(const char* op, const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
            std::initializer_list<SaveSpec> saved, BackwardFn backward);
/// The same with a saved list whose length is known only at run time.
void record(const char* op, const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
            const std::vector<SaveSpec>& saved, BackwardFn backward);

/// Reduces a gradient of a broadcast result to `shape` (sums the broadcast dims).
Tensor sum_to(const Tensor& grad, const Shape& shape);

/// An in-place op under autograd: refuses leaves that require grad and views of tensors
/// that require grad, computes out_of_place(snapshot of x) with recording, writes the result
/// into x and gives x the result's history. Ops call it when needs_grad() is true.
Tensor& inplace_with_autograd(Tensor& x, const char* op,
                              const std::function<Tensor(const Tensor& x_before)>& out_of_place);

/// Marks a view created by a differentiable view op (see check_inplace_autograd).
void mark_differentiable_view(const Tensor& view);

}  // namespace ignis::detail
