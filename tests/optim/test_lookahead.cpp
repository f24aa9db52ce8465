// EmaLookahead against the rule computed here in float64: a = decay a + (1 - decay) t, then
// t = a, for every floating-point parameter and buffer; integer buffers untouched.
#include <gtest/gtest.h>

#include "ignis/nn/conv.h"
#include "ignis/nn/containers.h"
#include "ignis/nn/layers.h"
#include "ignis/optim/lookahead.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

struct Net : nn::Module {
  Net() : fc(this, "fc", 3, 2), norm(this, "norm", 2) {}
  Tensor forward(const Tensor& x) override { return norm(fc(x)); }
  nn::Linear fc;
  nn::BatchNorm1d norm;
};

/// Moves every floating-point tensor of the module by a different amount (what training
/// would do between two updates).
void perturb(Net& net, double scale) {
  NoGradGuard no_grad;
  int k = 1;
  for (auto* t : {&net.fc.weight, &net.fc.bias, &net.norm.weight, &net.norm.bias,
                  &net.norm.running_mean, &net.norm.running_var})
    t->add_(random_tensor(t->sizes(), -scale, scale, uint64_t(k++)).to(t->dtype()));
}

std::vector<std::vector<double>> floating_values(const Net& net) {
  std::vector<std::vector<double>> out;
  for (const Tensor* t : {&net.fc.weight, &net.fc.bias, &net.norm.weight, &net.norm.bias,
                          &net.norm.running_mean, &net.norm.running_var})
    out.push_back(values_of(*t));
  return out;
}

TEST(EmaLookahead, UpdatePullsEveryFloatingTensorOntoItsAverage) {
  manual_seed(1);
  Net net;
  net.norm.num_batches_tracked.fill_(5);
  optim::EmaLookahead lookahead(net);
  auto average = floating_values(net);
  for (double decay : {0.3, 0.77, 0.0, 1.0}) {
    SCOPED_TRACE(::testing::Message() << "decay " << decay);
    perturb(net, 0.5);
    const auto live = floating_values(net);
    lookahead.update(decay);
    for (size_t i = 0; i < average.size(); ++i)
      for (size_t j = 0; j < average[i].size(); ++j)
        average[i][j] = decay * average[i][j] + (1 - decay) * live[i][j];
    const auto after = floating_values(net);
    for (size_t i = 0; i < average.size(); ++i)
      EXPECT_TRUE(all_close(after[i], round_to(average[i], kFloat32), 1e-6, 1e-7)) << "tensor " << i;
    average = after;  // the float32 averages carry on from here
  }
  EXPECT_EQ(net.norm.num_batches_tracked.item<int64_t>(), 5);
  std::vector<std::string> names;
  for (const auto& [name, t] : lookahead.averages()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight", "fc.bias", "norm.weight", "norm.bias",
                                             "norm.running_mean", "norm.running_var"}));
}

TEST(EmaLookahead, DecayOneRestoresTheAverageExactly) {
  manual_seed(2);
  Net net;
  optim::EmaLookahead lookahead(net);
  const auto start = floating_values(net);
  perturb(net, 1.0);
  lookahead.update(1.0);
  const auto after = floating_values(net);
  for (size_t i = 0; i < start.size(); ++i) EXPECT_TRUE(all_close(after[i], start[i], 0, 0));
}

TEST(EmaLookahead, DecayOutsideTheUnitIntervalIsRefused) {
  Net net;
  optim::EmaLookahead lookahead(net);
  EXPECT_THROW_MSG(lookahead.update(1.5), ValueError, "[EmaLookahead]");
  EXPECT_THROW_MSG(lookahead.update(-0.1), ValueError, "[EmaLookahead]");
}

}  // namespace
}  // namespace ignis::testing
