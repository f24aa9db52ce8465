// Data-parallel training of the design notes' MLP: `mpirun -np 2 ddp_mlp`. Each rank trains on
// its DistributedSampler share of the same synthetic data set; DistributedDataParallel averages
// the gradients, so the replicas stay equal. Rank 0 prints the loss averaged over the ranks;
// exits non-zero unless the last epoch's loss is lower than the first's.
#include <cstdio>

#include <ignis/ignis.h>

namespace ig = ignis;
namespace dist = ignis::distributed;

struct SimpleModel : ig::nn::Module {
  ig::nn::Linear fc1{this, "fc1", 10, 512};
  ig::nn::Linear fc2{this, "fc2", 512, 10};
  ig::Tensor forward(const ig::Tensor& x) override { return fc2(ig::relu(fc1(x))); }
};

int main() {
  dist::init();
  ig::manual_seed(0);  // the same data set on every rank; DDP copies rank 0's weights anyway
  auto x = ig::randn({1024, 10});
  auto y = ig::argmax(x.narrow(1, 0, 5), 1);  // a learnable rule: the largest of 5 features
  auto data = std::make_shared<ig::data::TensorDataset>(std::vector<ig::Tensor>{x, y});
  auto sampler = std::make_shared<ig::data::DistributedSampler>(data->size());
  ig::data::DataLoader loader(data, {.batch_size = 32, .sampler = sampler});

  SimpleModel model;
  ig::nn::DistributedDataParallel ddp(model);
  ig::optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    ig::Tensor total = ig::zeros({2}, ig::kFloat64);  // loss sum, batch count
    for (auto& [xb, yb] : loader) {
      auto loss = ig::nn::functional::cross_entropy(ddp(xb), yb);
      opt.zero_grad();
      loss.backward();
      opt.step();
      total += ig::stack({loss.detach().to(ig::kFloat64), ig::ones({}, ig::kFloat64)});
    }
    dist::all_reduce(total);
    std::vector<double> t = total.to_vector<double>();
    last = t[0] / t[1];
    if (epoch == 0) first = last;
    if (dist::rank() == 0)
      std::printf("epoch %d  loss %.4f  (%d ranks)\n", epoch, last, dist::world_size());
  }
  dist::destroy();
  return last < first ? 0 : 1;
}
