// The forward pass of the 10 -> 512 -> 10 MLP of the design notes, written with tensor ops
// (nn modules and training arrive with autograd). Prints the logits' shape, the softmax
// probabilities of the first sample and the predicted classes, and checks that every row of
// the softmax sums to one.
#include <cmath>
#include <cstdio>

#include <ignis/ignis.h>

namespace ig = ignis;

int main() {
  ig::manual_seed(0);
  const int64_t batch = 64, in = 10, hidden = 512, classes = 10;
  // PyTorch's default Linear init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  auto init = [](int64_t out, int64_t fan_in) {
    const double bound = 1.0 / std::sqrt(double(fan_in));
    return ig::rand({out, fan_in}) * (2 * bound) - bound;
  };
  ig::Tensor w1 = init(hidden, in), b1 = init(1, in).narrow(1, 0, 1).flatten().expand({hidden}).contiguous();
  ig::Tensor w2 = init(classes, hidden), b2 = ig::zeros({classes});
  ig::Tensor x = ig::randn({batch, in});

  ig::Tensor h = ig::relu(ig::addmm(b1, x, w1.t()));
  ig::Tensor logits = ig::addmm(b2, h, w2.t());
  ig::Tensor probs = ig::softmax(logits, 1);

  std::printf("device: %s, logits shape: [%lld, %lld]\n",
              ig::cuda::is_available() ? "cuda available (forward ran on cpu)" : "cpu",
              (long long)logits.size(0), (long long)logits.size(1));
  std::printf("probabilities of sample 0: %s\n", probs[0].str().c_str());
  std::printf("predicted classes: %s\n", ig::argmax(logits, 1).narrow(0, 0, 16).str().c_str());
  const double max_err = (probs.sum({1}) - 1).abs().max().item<double>();
  std::printf("max |row sum - 1| = %.3g\n", max_err);
  return max_err < 1e-5 ? 0 : 1;
}
