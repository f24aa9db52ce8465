// DistributedDataParallel under mpirun. The oracle is one process training the same model on
// the whole batch (every rank computes it too, from the same data): after a few SGD steps the
// DDP replicas must hold its parameters, with one or several buckets, with gradient
// accumulation under no_sync(), with a parameter forward never uses, and with zero_grad
// either dropping the gradients or zeroing them in place. The gradients must be views into
// the buckets' flat buffers (Note [DDP gradients as bucket views]): checked by address.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

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

// True when every trainable parameter's grad() is the bucket slice DDP reports for it.
::testing::AssertionResult grads_are_bucket_views(nn::DistributedDataParallel& ddp) {
  for (const auto& [name, p] : ddp.module().named_parameters()) {
    if (!p.grad().defined()) continue;
    if (p.grad().data_ptr() != ddp.gradient_bucket_view(name).data_ptr())
      return ::testing::AssertionFailure() << name << "'s grad() is not its bucket slice";
  }
  return ::testing::AssertionSuccess();
}

enum class ZeroGrad { SetToNone, InPlace };

// Trains `steps` SGD steps with DDP (accumulating `micro` micro-batches per step, all but the
// last under no_sync) and the single-process oracle side by side, then compares. Between
// steps both optimizers' zero_grad drops the gradients or zeroes them in place (`zero`).
void train_and_compare(nn::DistributedDataParallelOptions options, int steps, int micro,
                       ZeroGrad zero = ZeroGrad::SetToNone) {
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
    opt.zero_grad(zero == ZeroGrad::SetToNone);
    ref_opt.zero_grad(zero == ZeroGrad::SetToNone);
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
    EXPECT_TRUE(grads_are_bucket_views(ddp)) << "step " << step;
    opt.step();
    ref_opt.step();
  }
  // Float32 sums in a different order (per-rank means, then their average); measured within
  // 1e-7 relative on 2 and 3 ranks.
  expect_same_parameters(model, reference, 1e-6);
  EXPECT_FALSE(model.unused.weight.grad().defined());
}

// The small CNN: two convolutions (the first two-thirds of its gradient bytes), ReLU,
// pooling and a linear classifier, on 8x8 single-channel images.
struct SmallCNN : nn::Module {
  nn::Conv2d conv1{this, "conv1", 1, 8, 3, 1, 1, true};
  nn::Conv2d conv2{this, "conv2", 8, 16, 3, 1, 1, true};
  nn::Linear fc{this, "fc", 16, 4};
  ig::Tensor forward(const ig::Tensor& x) override {
    ig::Tensor h = ig::max_pool2d(ig::relu(conv1(x)), {.kernel_size = {2, 2}});
    return fc(ig::adaptive_avg_pool2d(ig::relu(conv2(h)), {1, 1}).flatten(1));
  }
};

std::pair<ig::Tensor, ig::Tensor> global_image_batch(int step) {
  const int64_t n = kLocalBatch * dist::world_size();
  ig::Tensor x = ig::testing::random_tensor({n, 1, 8, 8}, -1, 1, 3000 + step).to(ig::kFloat32);
  ig::Tensor y = ig::testing::random_tensor({n}, 0, 4, 4000 + step).to(ig::kInt64);
  return {x, y};
}

}  // namespace

// 20 SGD steps of the small CNN with zero_grad(set_to_none) between them. The convolutions'
// weight gradients must be written into the buckets by their kernel (Note [Gradient
// destinations]): only the biases and the linear layer's gradients are copied, by the count
// DDP reports. Training must match one process on the whole batch.
TEST(DDP, SmallCNNMatchesSingleProcessTrainingWithGradientsWrittenIntoTheBuckets) {
  SmallCNN model, reference;
  ig::manual_seed(uint64_t(23 + dist::rank()));
  model.conv1.reset_parameters();
  model.conv2.reset_parameters();
  model.fc.reset_parameters();
  nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = 1000 * 4 / 1048576.0});
  nn::StateDict copy;
  for (const auto& [k, v] : model.state_dict()) copy.insert(k, v.clone());
  reference.load_state_dict(copy);
  int64_t not_conv_weight_bytes = 0;
  for (const auto& [name, p] : model.named_parameters())
    if (name != "conv1.weight" && name != "conv2.weight") not_conv_weight_bytes += p.nbytes();
  const ig::optim::SGDOptions sgd{.lr = 0.05, .momentum = 0.9};
  ig::optim::SGD opt(model.parameters(), sgd);
  ig::optim::SGD ref_opt(reference.parameters(), sgd);
  for (int step = 0; step < 20; ++step) {
    SCOPED_TRACE(fmt::format("step {}", step));
    opt.zero_grad();
    ref_opt.zero_grad();
    const auto batch = global_image_batch(step);
    ig::nn::functional::cross_entropy(reference(batch.first), batch.second).backward();
    ig::nn::functional::cross_entropy(ddp(local_part(batch.first)), local_part(batch.second))
        .backward();
    EXPECT_TRUE(grads_are_bucket_views(ddp));
    EXPECT_EQ(ddp.copied_gradient_bytes(), not_conv_weight_bytes);
    opt.step();
    ref_opt.step();
  }
  EXPECT_EQ(ddp.bucket_parameter_names().size(), 3u);  // conv2's weight alone in one bucket
  expect_same_parameters(model, reference, 1e-6);
}

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

// 20 steps, as the small CNN's test below.
TEST(DDP, MatchesSingleProcessTrainingOneBucket) {
  train_and_compare({.find_unused_parameters = true}, 20, 1);
}

TEST(DDP, MatchesSingleProcessTrainingManyBuckets) {
  train_and_compare({.bucket_cap_mb = kSmallBucketMb, .find_unused_parameters = true}, 20, 1);
}

TEST(DDP, NoSyncAccumulationMatchesSingleProcess) {
  train_and_compare({.bucket_cap_mb = kSmallBucketMb, .find_unused_parameters = true}, 3, 3);
}

// zero_grad(set_to_none = false) keeps the views: backward accumulates into the buckets.
TEST(DDP, MatchesSingleProcessWithGradientsZeroedInPlace) {
  train_and_compare({.bucket_cap_mb = kSmallBucketMb, .find_unused_parameters = true}, 4, 1,
                    ZeroGrad::InPlace);
  train_and_compare({.find_unused_parameters = true}, 4, 1, ZeroGrad::InPlace);
}

TEST(DDP, NoSyncAccumulationIntoTheBucketsMatchesSingleProcess) {
  train_and_compare({.bucket_cap_mb = kSmallBucketMb, .find_unused_parameters = true}, 3, 3,
                    ZeroGrad::InPlace);
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

// The slices are laid out in bucket order inside one flat buffer per bucket: each parameter's
// slice starts where the previous one of its bucket ends.
TEST(DDP, GradientViewsTileEachBucketInOrder) {
  MLP model;
  nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = kSmallBucketMb});
  std::map<std::string, ig::Tensor> params;
  for (const auto& [name, p] : model.named_parameters()) params[name] = p;
  for (const auto& bucket : ddp.bucket_parameter_names()) {
    const float* next = nullptr;
    for (const auto& name : bucket) {
      SCOPED_TRACE(name);
      ig::Tensor v = ddp.gradient_bucket_view(name);
      EXPECT_EQ(v.sizes(), params.at(name).sizes());
      if (next) EXPECT_EQ(v.data_ptr<float>(), next);
      next = v.data_ptr<float>() + params.at(name).numel();
    }
  }
  EXPECT_THROW(ddp.gradient_bucket_view("fc3.weight"), ig::ValueError);
}

// Once established, the views survive: the optimizer step, zero_grad(false), later backward
// passes (autograd adds in place) and no_sync backward passes keep grad() at the same address.
// A gradient accumulated under no_sync is the plain local one (nothing scaled or reduced).
TEST(DDP, ViewsSurviveStepsAndLocalAccumulation) {
  MLP model, local;
  nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = kSmallBucketMb,
                                          .find_unused_parameters = true});
  load_from(local, model);
  ig::optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  ig::optim::SGD local_opt(local.parameters(), {.lr = 0.1, .momentum = 0.9});
  const float* fc1_grad = nullptr;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad(false);
    auto [x, y] = global_batch(step);
    ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
    ASSERT_TRUE(grads_are_bucket_views(ddp));
    if (step == 0) fc1_grad = model.fc1.weight.grad().data_ptr<float>();
    EXPECT_EQ(model.fc1.weight.grad().data_ptr<float>(), fc1_grad);
    opt.step();
    EXPECT_EQ(model.fc1.weight.grad().data_ptr<float>(), fc1_grad);
  }
  // The replicas are equal again; a local backward under no_sync accumulates into the bucket
  // and equals the same model's gradient on the rank's own batch alone.
  load_from(local, model);
  opt.zero_grad(false);
  auto [x, y] = global_batch(7);
  {
    auto guard = ddp.no_sync();
    ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
  }
  ig::nn::functional::cross_entropy(local(local_part(x)), local_part(y)).backward();
  EXPECT_EQ(model.fc1.weight.grad().data_ptr<float>(), fc1_grad);
  EXPECT_TRUE(ig::testing::all_close(model.fc1.weight.grad(),
                                     ig::testing::values_of(local.fc1.weight.grad()), 1e-6,
                                     1e-7));
}

// The bucket a comm_hook receives is the buffer the gradients view (the reduction is in
// place); a hook that returns its result in another tensor still leaves the right averages
// in grad(), which stay the views.
TEST(DDP, CommHookWorksOnTheBucketBuffers) {
  MLP model, reference;
  init_weights_per_rank(model);
  std::vector<const void*> hooked;
  nn::DistributedDataParallel ddp(
      model, {.bucket_cap_mb = kSmallBucketMb,
              .find_unused_parameters = true,
              .comm_hook = [&](dist::ProcessGroup& group, ig::Tensor& bucket) {
                hooked.push_back(bucket.data_ptr());
                ig::Tensor elsewhere = bucket.clone();
                auto work = group.all_reduce(elsewhere, dist::ReduceOp::Avg, true);
                bucket = elsewhere;
                return work;
              }});
  load_from(reference, model);
  auto [x, y] = global_batch(0);
  ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
  ig::nn::functional::cross_entropy(reference(x), y).backward();
  const auto buckets = ddp.bucket_parameter_names();
  ASSERT_EQ(hooked.size(), buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b)
    EXPECT_EQ(hooked[b], ddp.gradient_bucket_view(buckets[b][0]).data_ptr());
  EXPECT_TRUE(grads_are_bucket_views(ddp));
  for (auto* layer : {&model.fc1, &model.fc2}) {
    const auto& ref = layer == &model.fc1 ? reference.fc1 : reference.fc2;
    EXPECT_TRUE(ig::testing::all_close(layer->weight.grad(),
                                       ig::testing::values_of(ref.weight.grad()), 1e-5, 1e-7));
    EXPECT_TRUE(ig::testing::all_close(layer->bias.grad(),
                                       ig::testing::values_of(ref.bias.grad()), 1e-5, 1e-7));
  }
}

// A gradient that something replaced (here by hand, as a scaler or a create_graph backward
// may) is copied into its slice and grad() becomes the view again.
TEST(DDP, ReplacedGradientIsTakenBackIntoItsBucket) {
  MLP model, reference;
  init_weights_per_rank(model);
  nn::DistributedDataParallel ddp(model, {.find_unused_parameters = true});
  load_from(reference, model);
  auto [x, y] = global_batch(0);
  ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
  ASSERT_TRUE(grads_are_bucket_views(ddp));
  // Gradients that are not views, holding zeros: the next backward adds onto them.
  for (ig::Tensor p : model.parameters())
    if (p.grad().defined()) p.mutable_grad() = ig::zeros(p.sizes());
  ig::nn::functional::cross_entropy(ddp(local_part(x)), local_part(y)).backward();
  ig::nn::functional::cross_entropy(reference(x), y).backward();
  EXPECT_TRUE(grads_are_bucket_views(ddp));
  EXPECT_TRUE(ig::testing::all_close(model.fc1.weight.grad(),
                                     ig::testing::values_of(reference.fc1.weight.grad()), 1e-5,
                                     1e-7));
}
