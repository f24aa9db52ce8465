// EmaLookahead: the lookahead of the airbench CIFAR-10 recipes (after hlb-CIFAR10). It keeps
// an exponential moving average of a module's floating-point state — parameters and buffers
// such as batch-norm running statistics — and every update pulls the module back onto that
// average. Called every few optimizer steps with a decay that grows over the run, it damps the
// noise of large-learning-rate SGD late in training; a last update with decay 1 leaves the
// module at the average.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ignis/nn/module.h"
#include "ignis/tensor.h"

namespace ignis::optim {

class EmaLookahead {
 public:
  /// Snapshots every floating-point parameter and buffer of `module` (integer buffers such
  /// as num_batches_tracked are left alone). The module must keep its tensors (the same
  /// storage) for as long as this object updates it.
  explicit EmaLookahead(const nn::Module& module);
  /// For every tracked tensor t and its average a: a = decay a + (1 - decay) t (PyTorch's
  /// a.lerp_(t, 1 - decay)), then t = a. Outside autograd, on the tensors' own device.
  void update(double decay);
  /// The averages, by the module's state-dict names.
  const std::vector<std::pair<std::string, Tensor>>& averages() const { return averages_; }

 private:
  std::vector<Tensor> live_;
  std::vector<std::pair<std::string, Tensor>> averages_;
};

}  // namespace ignis::optim
