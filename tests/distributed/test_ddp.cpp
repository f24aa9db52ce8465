// DistributedDataParallel under mpirun. The oracle is one process training the same model on
// the whole batch (every rank computes it too, from the same data): after a few SGD steps the
// DDP replicas must hold its parameters, with one or several buckets, with gradient
// accumulation under no_sync(), and with a parameter forward never uses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ignis/ignis.h"
#include "support/test_support.h"

namespace ig = ignis;
namespace dist = ignis::distributed;
namespace nn = ignis::nn;

namespace {

struct MLP : nn::Module {
  nn::Linear fc1{this, "fc1", 10, 32};
  nn::Linear fc2{this, "fc2", 32, 4};
  nn::Linear unused{this, "unused", 4, 4};  // registered, never called by forward
  ig::Tensor forward(const ig::Tensor& x) override { return fc2(ig::relu(fc1(x))); }
};

constexpr int64_t kLocalBatch = 4;
// 129 floats per bucket: the MLP's parameters fall into 4 buckets (see BucketsFollow...).
constexpr double kSmallBucketMb = 129 * 4 / 1048576.0;

// The whole batch of step `step`: the same on every rank (an RNG independent of Ignis's).
std::pair<ig::Tensor, ig::Tensor> global_batch(int step) {
  const int64_t n = kLocalBatch * dist::world_size();
  ig::Tensor x = ig::testing::random_tensor({n, 10}, -1, 1, 1000 + step).to(ig::kFloat32);
  ig::Tensor y = ig::testing::random_tensor({n}, 0, 4, 2000 + step).to(ig::kInt64);
  return {x, y};
}
ig::Tensor local_part(const ig::Tensor& t) {
  return t.narrow(0, dist::rank() * kLocalBatch, kLocalBatch).contiguous();
}

// Seeds differ per rank, so only DDP's broadcast can make the replicas agree.
void init_weights_per_rank(MLP& m) {
  ig::manual_seed(uint64_t(17 + dist::rank()));
  for (auto* layer : {&m.fc1, &m.fc2, &m.unused}) layer->reset_parameters();
}

void load_from(MLP& dst, nn::Module& src) {
  nn::StateDict copy;
  for (const auto& [k, v] : src.state_dict()) copy.insert(k, v.clone());
  dst.load_state_dict(copy);
}

void expect_same_parameters(nn::Module& ddp_model, nn::Module& reference, double rtol) {
  for (const auto& [name, p] : reference.named_parameters()) {
    SCOPED_TRACE(name);
    ig::Tensor q;
    for (const auto& [n2, p2] : ddp_model.named_parameters())
      if (n2 == name) q = p2;
    EXPECT_TRUE(ig::testing::all_close(q, ig::testing::values_of(p), rtol, 1e-7));
  }
}

// Trains `steps` SGD steps with DDP (accumulating `micro` micro-batches per step, all but the
// last under no_sync) and the single-process oracle side by side, then compares.
void train_and_compare(nn::DistributedDataParallelOptions options, int steps, int micro) {
  MLP model, reference;
  init_weights_per_rank(model);
  nn::DistributedDataParallel ddp(model, options);
  load_from(reference, model);
  // Weight decay would move a parameter given a zero gradient: the never-used layer must keep
  // an undefined gradient, as in single-process training (Note [DDP unused parameters]).
  const ig::optim::SGDOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01};
  ig::optim::SGD opt(model.parameters(), sgd);
  ig::optim::SGD ref_opt(reference.parameters(), sgd);
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    ref_opt.zero_grad();
    for (int k = 0; k < micro; ++k) {
      // Not a structured binding: clang 14 (the sanitizer builds) cannot capture one in the
      // lambda below.
      const auto batch = global_batch(step * micro + k);
      const ig::Tensor& x = batch.first;
      const ig::Tensor& y = batch.second;
      ig::nn::functional::cross_entropy(reference(x), y).backward();
      auto local_loss = [&] {
        ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
      };
      if (k + 1 < micro) {
        auto guard = ddp.no_sync();
        local_loss();
      } else {
        local_loss();
      }
    }
    opt.step();
    ref_opt.step();
  }
  // Float32 sums in a different order (per-rank means, then their average); measured within
  // 1e-7 relative on 2 and 3 ranks.
  expect_same_parameters(model, reference, 1e-6);
  EXPECT_FALSE(model.unused.weight.grad().defined());
}

}  // namespace

TEST(DDP, BroadcastsRankZerosParametersAtConstruction) {
  MLP model;
  init_weights_per_rank(model);
  nn::DistributedDataParallel ddp(model);
  for (ig::Tensor p : model.parameters()) {
    ig::Tensor mine = p.detach().clone();
    ig::Tensor min = mine.clone(), max = mine.clone();
    dist::all_reduce(min, dist::ReduceOp::Min);
    dist::all_reduce(max, dist::ReduceOp::Max);
    EXPECT_TRUE(ig::testing::all_close(min, ig::testing::values_of(mine), 0, 0));
    EXPECT_TRUE(ig::testing::all_close(max, ig::testing::values_of(mine), 0, 0));
  }
}

TEST(DDP, MatchesSingleProcessTrainingOneBucket) {
  train_and_compare({.find_unused_parameters = true}, 4, 1);
}

TEST(DDP, MatchesSingleProcessTrainingManyBuckets) {
  train_and_compare({.bucket_cap_mb = kSmallBucketMb, .find_unused_parameters = true}, 4, 1);
}

TEST(DDP, NoSyncAccumulationMatchesSingleProcess) {
  train_and_compare({.bucket_cap_mb = kSmallBucketMb, .find_unused_parameters = true}, 3, 3);
}

TEST(DDP, BucketsFollowReverseRegistrationOrder) {
  MLP model;
  nn::DistributedDataParallel one(model);
  ASSERT_EQ(one.bucket_parameter_names().size(), 1u);
  EXPECT_EQ(one.bucket_parameter_names()[0],
            (std::vector<std::string>{"unused.bias", "unused.weight", "fc2.bias", "fc2.weight",
                                      "fc1.bias", "fc1.weight"}));
  MLP model2;
  nn::DistributedDataParallel many(model2, {.bucket_cap_mb = kSmallBucketMb});
  EXPECT_EQ(many.bucket_parameter_names(),
            (std::vector<std::vector<std::string>>{{"unused.bias", "unused.weight", "fc2.bias"},
                                                   {"fc2.weight"},
                                                   {"fc1.bias"},
                                                   {"fc1.weight"}}));
}

// A layer only rank 0 uses: without find_unused_parameters the other ranks' bucket holding it
// would never be reduced. The oracle averages the ranks' losses, each with its own forward.
struct BranchyMLP : MLP {
  bool use_extra = false;
  ig::Tensor forward(const ig::Tensor& x) override {
    ig::Tensor h = fc2(ig::relu(fc1(x)));
    return use_extra ? unused(h) : h;
  }
};

TEST(DDP, ParameterUsedOnSomeRanksOnly) {
  BranchyMLP model, reference;
  init_weights_per_rank(model);
  nn::DistributedDataParallel ddp(model,
                                  {.bucket_cap_mb = kSmallBucketMb, .find_unused_parameters = true});
  load_from(reference, model);
  model.use_extra = dist::rank() == 0;
  ig::optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  ig::optim::SGD ref_opt(reference.parameters(), {.lr = 0.1, .momentum = 0.9});
  const int n = dist::world_size();
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = global_batch(step);
    opt.zero_grad();
    ref_opt.zero_grad();
    ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
    ig::Tensor ref_loss;
    for (int r = 0; r < n; ++r) {
      reference.use_extra = r == 0;
      ig::Tensor xr = x.narrow(0, r * kLocalBatch, kLocalBatch);
      ig::Tensor yr = y.narrow(0, r * kLocalBatch, kLocalBatch);
      ig::Tensor l = ig::nn::functional::cross_entropy(reference(xr), yr) / double(n);
      ref_loss = ref_loss.defined() ? ref_loss + l : l;
    }
    ref_loss.backward();
    opt.step();
    ref_opt.step();
  }
  expect_same_parameters(model, reference, 1e-6);
}

// A bucket's all-reduce starts as soon as its gradients are ready, during backward: when the
// last gradient (fc1.weight's) arrives, fc2's buckets are already on their way. A hook the
// test registers before DDP's runs first on fc1.weight and counts the buckets started so far.
TEST(DDP, BucketsStartDuringBackward) {
  MLP model;
  int started = 0, started_before_last_gradient = -1;
  ig::autograd::register_post_accumulate_grad_hook(
      model.fc1.weight, [&](ig::Tensor&) { started_before_last_gradient = started; });
  nn::DistributedDataParallel ddp(
      model, {.bucket_cap_mb = kSmallBucketMb,
              .find_unused_parameters = true,
              .comm_hook = [&](dist::ProcessGroup& group, ig::Tensor& bucket) {
                ++started;
                return group.all_reduce(bucket, dist::ReduceOp::Avg, true);
              }});
  ASSERT_EQ(ddp.bucket_parameter_names().size(), 4u);
  auto [x, y] = global_batch(0);
  ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
  EXPECT_EQ(started, 4);
  // {unused.*, fc2.bias} and {fc2.weight} at least; {fc1.bias} too if its gradient came first.
  EXPECT_GE(started_before_last_gradient, 2);
  EXPECT_LE(started_before_last_gradient, 3);
}

// A communication hook decides what the gradients become: here the sum over ranks instead of
// the mean, so the DDP gradient is world_size times the single-process one.
TEST(DDP, CommHookReplacesTheAveraging) {
  MLP model, reference;
  init_weights_per_rank(model);
  nn::DistributedDataParallel ddp(
      model, {.find_unused_parameters = true,
              .comm_hook = [](dist::ProcessGroup& group, ig::Tensor& bucket) {
                return group.all_reduce(bucket, dist::ReduceOp::Sum, true);
              }});
  load_from(reference, model);
  auto [x, y] = global_batch(0);
  ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
  ig::nn::functional::cross_entropy(reference(x), y).backward();
  std::vector<double> expected = ig::testing::values_of(reference.fc1.weight.grad());
  for (double& v : expected) v *= dist::world_size();
  EXPECT_TRUE(ig::testing::all_close(model.fc1.weight.grad(), expected, 1e-5, 1e-7));
}

// Without find_unused_parameters the unused parameter's bucket cannot be reduced: the next
// forward says so, naming it, on every rank (instead of hanging).
TEST(DDP, UnusedParameterWithoutDetectionIsReportedNotHung) {
  MLP model;
  nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = kSmallBucketMb});
  auto [x, y] = global_batch(0);
  ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
  try {
    ddp(local_part(x));
    ADD_FAILURE() << "no error";
  } catch (const dist::DistributedError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(fmt::format("[DistributedDataParallel] rank {}", dist::rank())),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("unused.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("find_unused_parameters"), std::string::npos) << m;
  }
}

// Buffers come from rank 0 before each forward: rank r's running mean r+1 is replaced by 1,
// and the eval-mode output is BatchNorm with rank 0's statistics.
TEST(DDP, BroadcastsBuffersBeforeForward) {
  nn::BatchNorm1d bn(3);
  nn::DistributedDataParallel ddp(bn);
  bn.eval();
  bn.running_mean.fill_(double(dist::rank() + 1));
  bn.running_var.fill_(4.0);
  ig::Tensor x = ig::testing::random_tensor({2, 3}, -2, 2, 5).to(ig::kFloat32);
  ig::Tensor out = ddp(x);
  EXPECT_TRUE(ig::testing::all_close(bn.running_mean, {1, 1, 1}, 0, 0));
  std::vector<double> xs = ig::testing::values_of(x), expected;
  for (double v : xs) expected.push_back((v - 1) / std::sqrt(4.0 + 1e-5));
  EXPECT_TRUE(ig::testing::all_close(out, expected, 1e-6, 1e-6));
}

TEST(DDP, StateDictKeysGetTheModulePrefix) {
  MLP model;
  nn::DistributedDataParallel ddp(model);
  EXPECT_TRUE(ddp.state_dict().contains("module.fc1.weight"));
}
