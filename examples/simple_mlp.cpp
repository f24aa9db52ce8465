// The training program of the design notes: a 10 -> 512 -> 10 MLP trained with SGD and
// momentum for 100 steps on random data. Prints the loss every 10 steps and exits non-zero
// unless the final loss is lower than the first. Needs autograd's backward().
#include <cstdio>

#include <ignis/ignis.h>

namespace ig = ignis;

struct SimpleModel : ig::nn::Module {
  ig::nn::Linear fc1{this, "fc1", 10, 512};
  ig::nn::Linear fc2{this, "fc2", 512, 10};
  ig::Tensor forward(const ig::Tensor& x) { return fc2(ig::relu(fc1(x))); }
};

int main() {
  ig::manual_seed(0);
  ig::Device device = ig::cuda::is_available() ? ig::Device::cuda(0) : ig::Device::cpu();
  SimpleModel model;
  model.to(device);
  ig::optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  auto x = ig::randn({64, 10}, device);
  auto y = ig::randint(0, 10, {64}, device);
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    auto loss = ig::nn::functional::cross_entropy(model(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    last = loss.item<double>();
    if (step == 0) first = last;
    if (step % 10 == 0 || step == 99) std::printf("step %3d  loss %.6f\n", step, last);
  }
  std::printf("first loss %.6f, final loss %.6f\n", first, last);
  return last < first ? 0 : 1;
}
