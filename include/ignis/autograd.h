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

/// Whether anomaly detection is on for backward passes run on this thread.
bool is_anomaly_enabled();
void set_anomaly_enabled(bool enabled);

/// Turns anomaly detection on while alive (like torch.autograd.detect_anomaly): every
/// gradient a node's backward produces is checked, and a NaN or infinity throws ValueError
/// naming that node's op, the input the gradient is for (shape, dtype) and the forward op that
/// created that input. Off (the default), backward checks nothing and costs nothing extra.
/// The switch is per thread, like grad mode.
class detect_anomaly {
 public:
  detect_anomaly() : prev_(is_anomaly_enabled()) { set_anomaly_enabled(true); }
  ~detect_anomaly() { set_anomaly_enabled(prev_); }
  detect_anomaly(const detect_anomaly&) = delete;
  detect_anomaly& operator=(const detect_anomaly&) = delete;

 private:
  bool prev_;
};

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
