// Define-by-run automatic differentiation: grad mode guards, gradients without touching
// .grad(), post-accumulate hooks and a finite-difference gradient check.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ignis/tensor.h"

namespace ignis {

/// True unless a NoGradGuard is active on this thread.
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

/// Disables gradient recording on this thread while alive (like torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Re-enables gradient recording inside a NoGradGuard (like torch.enable_grad()).
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

namespace autograd {

/// Gradients of outputs with respect to inputs, returned instead of accumulated into
/// .grad() (torch.autograd.grad). grad_outputs default to ones for one-element outputs.
/// An input the outputs do not depend on throws unless allow_unused (then undefined).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false);

/// Calls hook(leaf) after backward() has accumulated into leaf.grad() (the distributed
/// data-parallel wrapper starts its all-reduce from here).
void register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(Tensor&)> hook);

struct GradcheckOptions {
  double eps = 1e-6;   ///< central-difference step
  double atol = 1e-5;
  double rtol = 1e-3;
};

/// Compares the analytic gradient of sum(fn(inputs) * random weights) with central finite
/// differences, in float64 (inputs are converted). Returns an empty string when every
/// element agrees, else a report naming the input, the element and both values.
std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& inputs, GradcheckOptions options = {});

}  // namespace autograd
}  // namespace ignis
