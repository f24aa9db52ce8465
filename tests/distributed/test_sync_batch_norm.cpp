// SyncBatchNorm under mpirun (2 and 3 ranks). The oracle is one BatchNorm over the
// concatenated batch of all ranks, which every rank computes from the same data: each rank's
// outputs and input gradients must be its slice of the oracle's, the weight and bias
// gradients summed over the ranks the oracle's, and the running statistics the oracle's.
// Ranks hold batches of different sizes (2, 3, 4 samples), so a count-weighting mistake
// shows. Tolerance: float32 (1e-5 relative, 1e-5 absolute); the sums are formed in a
// different order than in one process, so bit equality is not expected.
#include <gtest/gtest.h>

#include "ignis/ignis.h"
#include "support/test_support.h"

namespace ig = ignis;
namespace dist = ignis::distributed;
namespace nn = ignis::nn;
using ig::testing::all_close;
using ig::testing::values_of;

namespace {

constexpr double kRtol = 1e-5, kAtol = 1e-5;

int64_t local_size(int rank) { return 2 + rank; }
int64_t local_start(int rank) {
  int64_t s = 0;
  for (int r = 0; r < rank; ++r) s += local_size(r);
  return s;
}
int64_t global_size() { return local_start(dist::world_size()); }
ig::Tensor my_slice(const ig::Tensor& t) {
  return t.narrow(0, local_start(dist::rank()), local_size(dist::rank())).contiguous();
}
ig::Tensor random(const ig::Shape& shape, double lo, double hi, uint64_t seed) {
  return ig::testing::random_tensor(shape, lo, hi, seed).to(ig::kFloat32);
}
ig::Tensor summed_over_ranks(const ig::Tensor& t) {
  ig::Tensor s = t.clone();
  dist::all_reduce(s, dist::ReduceOp::Sum);
  return s;
}

// Same affine parameters in both (not the default ones and zeros, so their gradients matter).
void set_affine(nn::BatchNorm& bn, uint64_t seed) {
  ig::NoGradGuard no_grad;
  bn.weight.copy_(random({bn.num_features}, 0.5, 1.5, seed));
  bn.bias.copy_(random({bn.num_features}, -0.5, 0.5, seed + 1));
}

TEST(SyncBatchNorm, MatchesOneBatchNormOverTheConcatenatedBatch) {
  const int64_t C = 3;
  nn::BatchNorm2d reference(C);
  nn::SyncBatchNorm synced(C);
  set_affine(reference, 7);
  set_affine(synced, 7);
  for (int step = 0; step < 3; ++step) {  // running statistics accumulate over steps
    SCOPED_TRACE(step);
    // Offset and scale per step, so the running statistics move visibly.
    ig::Tensor x = random({global_size(), C, 4, 5}, -1 + step, 2 + 2 * step, 100 + step);
    ig::Tensor g = random({global_size(), C, 4, 5}, -1, 1, 200 + step);

    ig::Tensor xr = x.clone().requires_grad_();
    ig::Tensor yr = reference(xr);
    (yr * g).sum().backward();

    ig::Tensor xs = my_slice(x).requires_grad_();
    ig::Tensor ys = synced(xs);
    (ys * my_slice(g)).sum().backward();

    EXPECT_TRUE(all_close(ys, values_of(my_slice(yr.detach())), kRtol, kAtol)) << "output";
    EXPECT_TRUE(all_close(xs.grad(), values_of(my_slice(xr.grad())), kRtol, kAtol))
        << "input gradient";
    EXPECT_TRUE(all_close(summed_over_ranks(synced.weight.grad()),
                          values_of(reference.weight.grad()), kRtol, kAtol)) << "weight gradient";
    EXPECT_TRUE(all_close(summed_over_ranks(synced.bias.grad()), values_of(reference.bias.grad()),
                          kRtol, kAtol)) << "bias gradient";
    EXPECT_TRUE(all_close(synced.running_mean, values_of(reference.running_mean), kRtol, kAtol));
    EXPECT_TRUE(all_close(synced.running_var, values_of(reference.running_var), kRtol, kAtol));
    synced.zero_grad();
    reference.zero_grad();
  }
  EXPECT_EQ(synced.num_batches_tracked.item<int64_t>(), 3);
  // Eval mode normalises with the running statistics alone: no collective, same result.
  synced.eval();
  reference.eval();
  ig::Tensor x = random({local_size(dist::rank()), C, 4, 5}, -2, 2, 300 + dist::rank());
  EXPECT_TRUE(all_close(synced(x), values_of(reference(x)), kRtol, kAtol));
}

// convert_sync_batchnorm on a model: its BatchNorm1d now normalises over all ranks' batches,
// keeping its parameters and state-dict keys.
struct Net : nn::Module {
  nn::Linear fc{this, "fc", 6, 4};
  nn::BatchNorm1d bn{this, "bn", 4};
  ig::Tensor forward(const ig::Tensor& x) override { return ig::relu(bn(fc(x))); }
};

TEST(SyncBatchNorm, ConvertMakesAModelsBatchNormsSynchronise) {
  Net local, reference;
  ig::manual_seed(3);
  local.fc.reset_parameters();
  set_affine(local.bn, 11);
  {
    nn::StateDict copy;
    for (const auto& [k, v] : local.state_dict()) copy.insert(k, v.clone());
    reference.load_state_dict(copy);
  }
  const std::vector<std::string> keys_before = local.state_dict().keys();
  EXPECT_EQ(nn::convert_sync_batchnorm(local), 1);
  EXPECT_EQ(local.state_dict().keys(), keys_before);

  ig::Tensor x = random({global_size(), 6}, -1, 1, 400);
  ig::Tensor y_ref = reference(x);
  y_ref.sum().backward();
  ig::Tensor y = local(my_slice(x));
  y.sum().backward();
  EXPECT_TRUE(all_close(y, values_of(my_slice(y_ref.detach())), kRtol, kAtol));
  EXPECT_TRUE(all_close(summed_over_ranks(local.fc.weight.grad()),
                        values_of(reference.fc.weight.grad()), kRtol, kAtol));
  EXPECT_TRUE(all_close(local.bn.running_var, values_of(reference.bn.running_var), kRtol, kAtol));
}

// A ResNet block normalises through BatchNorm::forward_relu (the fused batch_norm_relu);
// converted, its three BatchNorms take SyncBatchNorm's statistics and compose the ReLU and
// the residual add, so the block equals one unconverted block over the concatenated batch.
TEST(SyncBatchNorm, ConvertedResNetBlockMatchesTheConcatenatedBatch) {
  ig::models::BasicBlock local(3, 4, 2), reference(3, 4, 2);
  {
    nn::StateDict copy;
    for (const auto& [k, v] : reference.state_dict()) copy.insert(k, v.clone());
    local.load_state_dict(copy);
  }
  EXPECT_EQ(nn::convert_sync_batchnorm(local), 3);
  ig::Tensor x = random({global_size(), 3, 6, 6}, -1, 1, 500);
  ig::Tensor g = random({global_size(), 4, 3, 3}, -1, 1, 501);
  ig::Tensor xr = x.clone().requires_grad_();
  ig::Tensor yr = reference(xr);
  (yr * g).sum().backward();
  ig::Tensor xs = my_slice(x).requires_grad_();
  ig::Tensor ys = local(xs);
  (ys * my_slice(g)).sum().backward();
  EXPECT_TRUE(all_close(ys, values_of(my_slice(yr.detach())), kRtol, kAtol)) << "output";
  EXPECT_TRUE(all_close(xs.grad(), values_of(my_slice(xr.grad())), kRtol, kAtol))
      << "input gradient";
  EXPECT_TRUE(all_close(summed_over_ranks(local.conv1.weight.grad()),
                        values_of(reference.conv1.weight.grad()), kRtol, kAtol)) << "conv1 gradient";
  EXPECT_TRUE(all_close(local.bn2.running_var, values_of(reference.bn2.running_var), kRtol, kAtol));
}

}  // namespace
