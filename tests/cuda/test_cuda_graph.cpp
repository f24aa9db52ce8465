// CUDA graphs (include/ignis/cuda_graph.h): a captured training step replays to the same
// parameters as the same steps run eagerly on the GPU (the eager GPU path is itself checked
// against the CPU in test_cuda_training.cpp), a learning-rate change reaches the replays, a
// step the graph cannot hold falls back with its one-line message, and cuda::Graph replays
// what it captured on new input values (all_finite's check among them).
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/graph_capture.h"
#include "cuda/cuda_test_util.h"
#include "ignis/cuda_graph.h"
#include "ignis/models.h"
#include "ignis/optim/adam.h"
#include "ignis/optim/lr_scheduler.h"
#include "ignis/optim/sgd.h"

namespace ignis {
namespace {
using testing::DeterministicConvolutions;
using testing::kGpu;

/// Batches that differ per step, so the static inputs must really be refreshed.
std::vector<std::pair<Tensor, Tensor>> batches(const Shape& x_shape, int n, uint64_t seed) {
  Generator g(seed);
  std::vector<std::pair<Tensor, Tensor>> out;
  for (int i = 0; i < n; ++i)
    out.emplace_back(
        randn(x_shape, {}, &g).to(kGpu), randint(0, 10, {x_shape[0]}, {}, &g).to(kGpu));
  return out;
}

/// Captures `body` into `graph` on `side`, a stream of its own that first waits for the work
/// queued so far (what capture_step does for a whole step).
void capture_on(cuda::Graph& graph, const cuda::Stream& side, const std::function<void()>& body) {
  cuda::Event queued;
  queued.record();
  side.wait(queued);
  cuda::StreamGuard guard(side);
  graph.capture_begin(side);
  body();
  graph.capture_end();
}

struct TrainRun {
  std::vector<double> losses;
  std::vector<Tensor> params;  // on the CPU
};

const optim::SGDOptions kSgd{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4};

/// Trains model on the batches with SGD, the step captured or not; schedule(group, step)
/// (when given) sets the group's options before each step, as a scheduler would; in_body
/// (when given) runs at the start of every call of the step's body.
template <class Model>
TrainRun train(
    Model& model,
    const std::vector<std::pair<Tensor, Tensor>>& data,
    bool captured,
    const std::function<void(optim::ParamGroup&, int)>& schedule = {},
    const optim::SGDOptions& sgd = kSgd,
    const std::function<void()>& in_body = {}) {
  optim::SGD opt(model.parameters(), sgd);
  const auto body = [&](const Tensor& x, const Tensor& y) {
    if (in_body) in_body();
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  std::string fallback;
  auto step =
      cuda::capture_step(body, {.on_fallback = [&](const std::string& m) { fallback = m; }});
  TrainRun r;
  for (size_t s = 0; s < data.size(); ++s) {
    if (schedule) schedule(opt.param_groups()[0], int(s));
    const Tensor loss =
        captured ? step(data[s].first, data[s].second) : body(data[s].first, data[s].second);
    r.losses.push_back(loss.item<double>());
  }
  EXPECT_EQ(fallback, "");
  // (On the CPU of a dry run nothing is captured: capture_step runs CPU inputs eagerly.)
  if (captured && !testing::dry_run_on_cpu()) EXPECT_TRUE(step.captured());
  for (const Tensor& p : model.parameters()) r.params.push_back(p.detach().cpu());
  // Batch norm's running statistics too: the graph updates them in place on every replay.
  for (const Tensor& b : model.buffers()) r.params.push_back(b.detach().cpu().to(kFloat64));
  return r;
}

void expect_same(const TrainRun& graph, const TrainRun& eager, double tol) {
  ASSERT_EQ(graph.losses.size(), eager.losses.size());
  for (size_t s = 0; s < eager.losses.size(); ++s)
    EXPECT_NEAR(graph.losses[s], eager.losses[s], tol * (1 + std::abs(eager.losses[s])))
        << "loss of step " << s;
  ASSERT_EQ(graph.params.size(), eager.params.size());
  for (size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_TRUE(testing::all_close(
        testing::values_of(graph.params[i]), testing::values_of(eager.params[i]), tol, tol))
        << "parameter " << i;
}

// 3 warm-up steps, then the capture's own replay and 4 more: 5 replays.
constexpr int kSteps = 8;

TEST(CudaGraph, CapturedMlpStepMatchesEagerSteps) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(21);
  models::MLP eager_model, graph_model;
  graph_model.load_state_dict(eager_model.state_dict());
  eager_model.to(kGpu);
  graph_model.to(kGpu);
  const auto data = batches({64, 10}, kSteps, 22);
  const TrainRun eager = train(eager_model, data, false);
  const TrainRun graph = train(graph_model, data, true);
  expect_same(graph, eager, 1e-5);
}

TEST(CudaGraph, CapturedSmallCnnStepMatchesEagerSteps) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(23);
  models::SmallCNN eager_model, graph_model;
  graph_model.load_state_dict(eager_model.state_dict());
  eager_model.to(kGpu);
  graph_model.to(kGpu);
  const auto data = batches({16, 1, 28, 28}, kSteps, 24);
  const TrainRun eager = train(eager_model, data, false);
  const TrainRun graph = train(graph_model, data, true);
  expect_same(graph, eager, 1e-4);
}

/// Where two threads wait for each other: meet(k) returns once both have arrived at meeting
/// k, or after a minute (a partner that failed earlier then fails the test, not hangs it).
class Rendezvous {
 public:
  void meet(int k) {
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_[k];
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::minutes(1), [&] { return arrived_[k] >= 2; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, int> arrived_;
};

// Two threads capture their own steps on one device at the same time. A capture that begins
// while the other thread's is under way must leave it intact (a device synchronisation there
// would invalidate it, whatever the capture mode: Note [Whole-step capture]). The threads
// meet at their last warm-up step (both past their first-use set-up) and again inside their
// captures, so each capture begins while the other's is open or is open while it begins.
TEST(CudaGraph, TwoThreadsCaptureTheirStepsAtTheSameTime) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(41);
  models::MLP reference, first, second;
  for (auto* m : {&first, &second}) m->load_state_dict(reference.state_dict());
  for (auto* m : {&reference, &first, &second}) m->to(kGpu);
  const auto data = batches({64, 10}, kSteps, 42);
  const TrainRun eager = train(reference, data, false);
  Rendezvous rendezvous;
  const auto run = [&](models::MLP& model, TrainRun& out) {
    int calls = 0;
    const auto meet_in_body = [&] {
      if (++calls == 3) rendezvous.meet(0);  // the last warm-up step
      if (ignis::detail::capture_underway()) rendezvous.meet(1);
    };
    out = train(model, data, true, {}, kSgd, meet_in_body);
  };
  TrainRun a, b;
  std::thread other([&] { run(second, b); });
  run(first, a);
  other.join();
  expect_same(a, eager, 1e-5);
  expect_same(b, eager, 1e-5);
}

// As OneCycle does: both the learning rate and the momentum change after the capture.
TEST(CudaGraph, LearningRateAndMomentumChangesReachTheReplays) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(25);
  models::MLP a, b, c, d;
  for (auto* m : {&b, &c, &d}) m->load_state_dict(a.state_dict());
  for (auto* m : {&a, &b, &c, &d}) m->to(kGpu);
  const auto data = batches({64, 10}, kSteps, 26);
  const auto cycle = [](optim::ParamGroup& g, int s) {
    g.set("lr", s < 5 ? 0.05 : 0.005);
    g.set("momentum", s < 5 ? 0.9 : 0.5);
  };
  const TrainRun eager = train(a, data, false, cycle);
  const TrainRun graph = train(b, data, true, cycle);
  expect_same(graph, eager, 1e-5);
  // A graph that kept the captured lr, or the captured momentum, would have trained as these.
  const TrainRun lr_kept = train(c, data, false, [](optim::ParamGroup& g, int s) {
    g.set("momentum", s < 5 ? 0.9 : 0.5);
  });
  const TrainRun momentum_kept = train(d, data, false, [](optim::ParamGroup& g, int s) {
    g.set("lr", s < 5 ? 0.05 : 0.005);
  });
  EXPECT_GT(std::abs(lr_kept.losses.back() - eager.losses.back()), 1e-4);
  // Beyond expect_same's tolerance, or a graph that kept its momentum would pass (on the CPU
  // the same runs differ by up to 1.3e-4 in the first weight).
  EXPECT_FALSE(testing::all_close(testing::values_of(momentum_kept.params[0]),
                                  testing::values_of(eager.params[0]), 1e-5, 1e-5));
}

// The trainer's default GPU step: ResNet-18 (batch norm's running statistics updated inside
// the graph), SGD with Nesterov momentum, lr and momentum changed after the capture as
// OneCycle does, and a shorter batch between replays, which the captured step runs eagerly
// (the graph's static inputs have the full batch's shape), as the last batch of an epoch.
TEST(CudaGraph, CapturedResNet18StepMatchesEagerSteps) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(29);
  const models::ResNetConfig cfg{.num_classes = 10, .stem = models::ResNetStem::Cifar};
  auto eager_model = models::resnet18(cfg), graph_model = models::resnet18(cfg);
  graph_model->load_state_dict(eager_model->state_dict());
  eager_model->to(kGpu);
  graph_model->to(kGpu);
  auto data = batches({8, 3, 32, 32}, kSteps, 30);
  data.insert(data.begin() + 6, batches({5, 3, 32, 32}, 1, 31)[0]);
  const auto cycle = [](optim::ParamGroup& g, int s) {
    g.set("lr", s < 5 ? 0.05 : 0.02);
    g.set("momentum", s < 5 ? 0.9 : 0.85);
  };
  const optim::SGDOptions sgd{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true};
  const DeterministicConvolutions deterministic;
  const TrainRun eager = train(*eager_model, data, false, cycle, sgd);
  const TrainRun graph = train(*graph_model, data, true, cycle, sgd);
  // The same kernels in the same order (and no convolution adding with atomics).
  expect_same(graph, eager, 1e-4);
}

/// The airbench94 recipe (models::Airbench94Trainer) on the GPU for two epochs of 6 batches,
/// its step captured or eager, whitening bias training for `bias_epochs`; losses, parameters
/// and batch-norm statistics as train() gathers them.
TrainRun train_airbench(models::AirbenchNet& net, const std::vector<std::pair<Tensor, Tensor>>& data,
                        bool captured, int64_t bias_epochs, std::optional<DType> autocast) {
  const int64_t per_epoch = int64_t(data.size()) / 2;
  // lr is given per 1024 samples of a summed loss: x64 gives batches of 16 the recipe's step
  // size, so that two epochs move the whitening bias measurably (~0.04 on the CPU).
  models::Airbench94Trainer trainer(
      net, data[0].first.size(0), int64_t(data.size()),
      {.lr = 11.5 * 64, .whiten_bias_epochs = bias_epochs, .autocast = autocast,
       .cuda_graph = captured});
  TrainRun r;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    trainer.begin_epoch(epoch);
    for (int64_t i = 0; i < per_epoch; ++i) {
      const auto& [x, y] = data[size_t(epoch * per_epoch + i)];
      r.losses.push_back(trainer.step(x, y).loss.item<double>());
    }
    // 3 eager warm-up steps, the capture and 2 replays per epoch: a new graph each epoch.
    EXPECT_EQ(trainer.step_in_cuda_graph(), captured && !testing::dry_run_on_cpu())
        << "epoch " << epoch;
  }
  for (const Tensor& p : net.parameters()) r.params.push_back(p.detach().cpu().to(kFloat64));
  for (const Tensor& b : net.buffers()) r.params.push_back(b.detach().cpu().to(kFloat64));
  return r;
}

// The recipe's step replayed from a CUDA graph trains as its eager steps: the schedule moves
// the lr on every step, the lookahead moves weights and statistics between replays (after
// steps 5 and 10, and onto the average after the last), and the graph is captured anew when
// the whitening bias stops training at the second epoch — a graph that kept training it
// would have trained as `kept_net`. In float32, and as the preset runs (bf16 autocast,
// channels-last).
TEST(CudaGraph, CapturedAirbenchStepsMatchEagerSteps) {
  IGNIS_REQUIRE_CUDA();
  // A convolution algorithm adding with atomics would make even two eager runs differ in
  // bf16 roundings, which the biases' large learning rate carries past the tolerance.
  const DeterministicConvolutions deterministic;
  for (const bool low : {false, true}) {
    SCOPED_TRACE(low ? "bf16 autocast, channels-last" : "float32");
    manual_seed(33);
    models::AirbenchNet eager_net, graph_net, kept_net;
    eager_net.init_whitening(randn({64, 3, 32, 32}));
    for (auto* net : {&graph_net, &kept_net}) net->load_state_dict(eager_net.state_dict());
    for (auto* net : {&eager_net, &graph_net, &kept_net}) {
      net->to(kGpu);
      if (low) net->to(MemoryFormat::channels_last);
    }
    const auto data = batches({16, 3, 32, 32}, 12, 34);
    const std::optional<DType> autocast =
        low ? std::optional<DType>(kBFloat16) : std::nullopt;
    const TrainRun eager = train_airbench(eager_net, data, false, 1, autocast);
    const TrainRun graph = train_airbench(graph_net, data, true, 1, autocast);
    train_airbench(kept_net, data, false, 2, autocast);
    const double tol = low ? 2e-3 : 1e-4;
    expect_same(graph, eager, tol);
    // The control: a graph that kept training the bias would fail expect_same by a margin.
    EXPECT_GT(kept_net.whiten.bias.detach().sub(eager_net.whiten.bias.detach()).abs().max()
                  .item<double>(),
              2 * tol);
  }
}

/// A step with SGD on an MLP whose body also runs `extra` (something a graph cannot hold);
/// returns the fallback message and checks the parameters equal eager training.
std::string fallback_of(const std::function<void(const Tensor& loss)>& extra, bool adam = false) {
  manual_seed(27);
  models::MLP eager_model, graph_model;
  graph_model.load_state_dict(eager_model.state_dict());
  eager_model.to(kGpu);
  graph_model.to(kGpu);
  const auto data = batches({64, 10}, 6, 28);
  std::vector<Tensor> finals;
  std::string message;
  for (auto* model : {&eager_model, &graph_model}) {
    std::unique_ptr<optim::Optimizer> opt;
    if (adam)
      opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 1e-3});
    else
      opt = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.05});
    const auto body = [&](const Tensor& x, const Tensor& y) {
      opt->zero_grad();
      Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
      extra(loss);
      loss.backward();
      opt->step();
      return loss;
    };
    auto step =
        cuda::capture_step(body, {.on_fallback = [&](const std::string& m) { message = m; }});
    for (const auto& [x, y] : data) (model == &eager_model ? body(x, y) : step(x, y));
    if (model == &graph_model) {
      EXPECT_TRUE(step.fell_back());
      EXPECT_FALSE(step.captured());
      EXPECT_NE(step.fallback_reason(), "");
    }
    finals.push_back(model->fc1.weight.detach().cpu());
  }
  EXPECT_TRUE(
      testing::all_close(testing::values_of(finals[1]), testing::values_of(finals[0]), 1e-6, 1e-6))
      << "the fallback must train exactly like eager steps";
  return message;
}

TEST(CudaGraph, HostSyncInTheStepFallsBackWithAMessage) {
  IGNIS_REQUIRE_CUDA();
  const std::string m = fallback_of([](const Tensor& loss) { (void)loss.item<double>(); });
  EXPECT_NE(m.find("cannot be captured into a CUDA graph"), std::string::npos) << m;
  EXPECT_NE(m.find("to(device)"), std::string::npos) << m;  // the op that synchronised
  EXPECT_EQ(m.find('\n'), std::string::npos) << "one line";
}

TEST(CudaGraph, RandomNumbersAndAdamFallBackNamingTheCause) {
  IGNIS_REQUIRE_CUDA();
  const std::string r = fallback_of([](const Tensor& loss) { (void)rand_like(loss); });
  EXPECT_NE(r.find("[random]"), std::string::npos) << r;
  const std::string a = fallback_of([](const Tensor&) {}, /*adam=*/true);
  EXPECT_NE(a.find("[Adam]"), std::string::npos) << a;
}

TEST(CudaGraph, GraphReplaysOnNewInputsAndKeepsItsMemory) {
  IGNIS_REQUIRE_CUDA();
  Tensor x = full({1000}, 1.0, {kFloat32, kGpu});
  cuda::Stream side = cuda::Stream::create(0);
  cuda::Graph graph;
  Tensor y;
  capture_on(graph, side, [&] { y = x * 3 + 1; });  // y allocated in the graph's pool
  EXPECT_TRUE(graph.captured());
  const void* y_address = y.data_ptr();
  graph.replay();
  EXPECT_DOUBLE_EQ(y[7].item<double>(), 4.0);
  x.fill_(2.0);
  graph.replay();
  EXPECT_DOUBLE_EQ(y[999].item<double>(), 7.0);
  // Once the user lets go of y, an eager tensor of the same size on the same stream still
  // never gets its memory while the graph lives: the graph writes there on every replay.
  y = Tensor();
  const size_t allocs_before = cuda::memory_stats(0).num_device_allocs;
  Tensor eager;
  {
    cuda::StreamGuard guard(side);
    eager = empty({1000}, {kFloat32, kGpu});
  }
  EXPECT_NE(eager.data_ptr(), y_address);
  // Nor any block of the graph's segment: the eager tensor needed a segment of its own (a
  // freed graph block handed back to the eager pool would have served it, merged or not).
  EXPECT_EQ(cuda::memory_stats(0).num_device_allocs, allocs_before + 1);
  EXPECT_THROW(graph.capture_begin(side), ValueError);  // holds a capture already
  cuda::Graph other;
  EXPECT_THROW(other.capture_begin(cuda::default_stream(0)), ValueError);  // shared stream
  graph.reset();
  EXPECT_FALSE(graph.captured());
  EXPECT_THROW(graph.replay(), ValueError);
}

// all_finite inside a capture: no host read, so the graph holds it, and each replay checks
// the values the tensors hold then.
TEST(CudaGraph, AllFiniteIsCapturedAndChecksEachReplaysValues) {
  IGNIS_REQUIRE_CUDA();
  std::vector<Tensor> grads = testing::gradient_like_list(kGpu, 7);
  const cuda::Stream side = cuda::Stream::create(0);
  cuda::Graph graph;
  Tensor ok;
  capture_on(graph, side, [&] { ok = all_finite(grads); });
  graph.replay();
  EXPECT_TRUE(ok.item<bool>());
  grads[0].narrow(0, 3 * 65536 + 1, 1).fill_(std::numeric_limits<double>::infinity());
  graph.replay();
  EXPECT_FALSE(ok.item<bool>());
  grads[0].fill_(1.0);
  grads[2].t().narrow(0, 5, 1).fill_(std::numeric_limits<double>::quiet_NaN());
  graph.replay();
  EXPECT_FALSE(ok.item<bool>());
  grads[2].fill_(0.5);
  graph.replay();
  EXPECT_TRUE(ok.item<bool>());
}

}  // namespace
}  // namespace ignis
