// The fused cross-entropy and SGD update on the GPU against the CPU, then whole training
// steps: the 10 -> 512 -> 10 MLP and a ResNet-18 (CIFAR stem) on small images train for a
// few steps on each device from the same weights and data, and the losses of every step and
// the final weights and batch-norm statistics agree (float32, TF32 off; the GPU sums in
// other orders, so agreement is to ~1e-5 relative per op, looser after several steps).
#include <cmath>
#include <functional>
#include <string>

#include "cuda/cuda_test_util.h"
#include "ignis/amp.h"
#include "ignis/models.h"
#include "ignis/optim/sgd.h"

namespace ignis {
namespace {
using nn::functional::CrossEntropyOptions;
using nn::functional::Reduction;
using testing::kGpu;
using testing::matches_cpu;
using testing::random_tensor;

TEST(CudaLoss, FusedCrossEntropyAndItsGradientMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  Generator g(5);
  const int64_t N = 37, C = 11;
  Tensor target = randint(0, C, {N}, {}, &g);
  target.narrow(0, 3, 4).fill_(Scalar(int64_t(-100)));  // ignored rows
  const Tensor logits = random_tensor({N, C}, -4, 4, 1), weight = random_tensor({C}, 0.2, 2, 2);
  // Many classes: a warp walks a long row.
  const Tensor wide = random_tensor({5, 3000}, -4, 4, 3);
  const Tensor wide_target = randint(0, 3000, {5}, {}, &g);
  for (DType t : {kFloat32, kFloat64}) {
    const double tol = t == kFloat64 ? 1e-12 : 2e-5;
    for (Reduction r : {Reduction::None, Reduction::Sum, Reduction::Mean})
      for (bool weighted : {false, true})
        for (double eps : {0.0, 0.1}) {
          const auto run = [&](Device d, const Tensor& x, const Tensor& y) {
            CrossEntropyOptions o{.label_smoothing = eps, .reduction = r};
            if (weighted) o.weight = weight.to(d, t);
            Tensor xl = x.to(d, t, false, /*copy=*/true).requires_grad_();
            const Tensor loss = nn::functional::cross_entropy(xl, y.to(d), o);
            const Tensor up = random_tensor(loss.sizes(), 0.5, 1.5, 4).to(d, t);
            (loss * up).sum().backward();
            return std::pair{loss.detach(), xl.grad()};
          };
          const std::string tag = std::string(dtype_name(t)) + " reduction " +
                                  std::to_string(int(r)) + (weighted ? " weighted" : "") +
                                  " smoothing " + std::to_string(eps);
          const auto [lc, gc] = run(Device::cpu(), logits, target);
          const auto [lg, gg] = run(kGpu, logits, target);
          EXPECT_TRUE(matches_cpu(lg, lc, tol, tol)) << tag << " loss";
          EXPECT_TRUE(matches_cpu(gg, gc, tol, tol)) << tag << " gradient";
          if (weighted) continue;
          const auto [wc, wgc] = run(Device::cpu(), wide, wide_target);
          const auto [wg, wgg] = run(kGpu, wide, wide_target);
          EXPECT_TRUE(matches_cpu(wg, wc, tol, tol)) << tag << " 3000 classes loss";
          EXPECT_TRUE(matches_cpu(wgg, wgc, tol, tol)) << tag << " 3000 classes gradient";
        }
  }
  // A target out of range is an IndexError naming it, as on the CPU, raised at the first
  // synchronisation after the call (Note [Deferred kernel errors]); once raised it is gone and
  // the device keeps working.
  Tensor out_of_range = target.clone();
  out_of_range.narrow(0, 9, 1).fill_(Scalar(int64_t(C + 3)));
  out_of_range.narrow(0, 20, 1).fill_(Scalar(int64_t(-5)));
  const Tensor bad =
      nn::functional::cross_entropy(logits.to(kGpu, kFloat32), out_of_range.to(kGpu));
  std::string message;
  try {
    (void)bad.item<double>();
  } catch (const IndexError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("target 14 is out of range for 11 classes (row 9 of 37"),
            std::string::npos)
      << message;
  const Tensor good = nn::functional::cross_entropy(logits.to(kGpu, kFloat32), target.to(kGpu));
  EXPECT_NO_THROW(cuda::synchronize());
  // logits is float64 (random_tensor): the reference runs on the same float32 values.
  EXPECT_TRUE(matches_cpu(
      good, nn::functional::cross_entropy(logits.to(kFloat32), target), 2e-5, 2e-5));
  // Stream::synchronize raises it too; and when nothing synchronises (the stream only
  // polled), the next cross-entropy call does, before queueing anything.
  const Tensor bad_logits = logits.to(kGpu, kFloat32), bad_target = out_of_range.to(kGpu);
  (void)nn::functional::cross_entropy(bad_logits, bad_target);
  EXPECT_THROW(cuda::current_stream().synchronize(), IndexError);
  (void)nn::functional::cross_entropy(bad_logits, bad_target);
  while (!cuda::current_stream().query()) {
  }
  EXPECT_THROW(nn::functional::cross_entropy(bad_logits, target.to(kGpu)), IndexError);
  EXPECT_NO_THROW(nn::functional::cross_entropy(bad_logits, target.to(kGpu)).item<double>());
}

// The eager forward queues its kernels and returns without waiting for the GPU (the divisor
// of the mean stays on the device), and so does gradient clipping: with eight 8192^3 float32
// matrix products queued ahead (~9 TFLOP), the loss, its gradient and the clipping are queued
// while the stream is still busy, and are right once it is done.
TEST(CudaLoss, CrossEntropyDoesNotWaitForTheGpu) {
  IGNIS_REQUIRE_CUDA();
  const Tensor logits = random_tensor({64, 10}, -3, 3, 7);
  const Tensor target = randint(0, 10, {64});
  // Copied before the busy work: a copy from pageable host memory may wait for the stream.
  Tensor x = logits.to(kGpu).requires_grad_();
  const Tensor gpu_target = target.to(kGpu);
  const Tensor a = randn({8192, 8192}, {kFloat32, kGpu}) * (1.0 / 90.5);
  Tensor busy = a;
  for (int i = 0; i < 8; ++i) busy = matmul(busy, a);  // eight 8192^3 float32 products
  const Tensor loss = nn::functional::cross_entropy(x, gpu_target);
  loss.backward();
  const Tensor norm = nn::utils::clip_grad_norm_({x}, 0.05);  // clipping waits for nothing
  // A second loss while the first one's report is still in flight: its query of that report
  // finds it not ready, which must not fail the launches that follow.
  const Tensor again = nn::functional::cross_entropy(x.detach(), gpu_target) * 2;
  EXPECT_FALSE(cuda::current_stream().query()) << "the step waited for the queued products";
  Tensor xc = logits.clone().requires_grad_();
  const Tensor expected = nn::functional::cross_entropy(xc, target);
  expected.backward();
  const Tensor expected_norm = nn::utils::clip_grad_norm_({xc}, 0.05);
  EXPECT_GT(expected_norm.item<double>(), 0.05);  // so the gradient was scaled
  EXPECT_TRUE(matches_cpu(norm, expected_norm, 2e-5, 2e-5));
  EXPECT_TRUE(matches_cpu(loss, expected, 2e-5, 2e-5));
  EXPECT_TRUE(matches_cpu(again, expected.detach() * 2, 2e-5, 2e-5));
  EXPECT_TRUE(matches_cpu(x.grad(), xc.grad(), 2e-5, 2e-5));
  EXPECT_TRUE(std::isfinite(busy.abs().max().item<double>()));
}

TEST(CudaOptim, FusedSgdMatchesTheCpuOverSteps) {
  IGNIS_REQUIRE_CUDA();
  const optim::SGDOptions variants[] = {
      {.lr = 0.1},
      {.lr = 0.05, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01},
      {.lr = 0.05, .momentum = 0.8, .weight_decay = 1e-3, .nesterov = true},
      {.lr = 0.02, .momentum = 0.5, .maximize = true},
  };
  const Tensor p0 = random_tensor({3001}, -1, 1, 30);  // odd size: no whole vector at the end
  for (DType t : {kFloat32, kFloat64})
    for (const auto& o : variants) {
      const auto train = [&](Device d) {
        Tensor p = p0.to(d, t, false, /*copy=*/true).requires_grad_();
        optim::SGD opt({p}, o);
        for (int step = 0; step < 4; ++step) {
          opt.zero_grad();
          // grad = r_step: a fresh gradient each step.
          (p * random_tensor({3001}, -1, 1, 31 + step).to(d, t)).sum().backward();
          opt.step();
        }
        return p.detach();
      };
      const double tol = t == kFloat64 ? 1e-13 : 1e-6;
      EXPECT_TRUE(matches_cpu(train(kGpu), train(Device::cpu()), tol, tol))
          << dtype_name(t) << " momentum " << o.momentum << " nesterov " << o.nesterov;
    }
}

/// Trains `model` (a copy per device of the same initial weights) for `steps` SGD steps on
/// fixed batches; returns the losses and the final state (parameters and buffers) on the CPU.
struct TrainResult {
  std::vector<double> losses;
  Tensor eval_output;  // the trained model in eval mode on the batch (running statistics)
  std::vector<nn::StateDict::Item> state;
};
/// With bf16: forward and loss under amp::autocast(kBFloat16), as `ignis train --amp bf16`.
TrainResult train(nn::Module& model, Device d, const Tensor& x, const Tensor& y, int steps,
                  bool bf16 = false) {
  model.to(d);
  model.train();
  optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
  TrainResult r;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss;
    {
      amp::autocast mixed(kBFloat16, bf16);
      const Tensor logits = model.forward(x.to(d));
      if (bf16) EXPECT_EQ(logits.dtype(), kBFloat16) << d.str();
      loss = nn::functional::cross_entropy(logits, y.to(d));
    }
    loss.backward();
    opt.step();
    r.losses.push_back(loss.item<double>());
  }
  for (auto& [name, t] : model.state_dict()) r.state.emplace_back(name, t.cpu());
  model.eval();
  r.eval_output = model.forward(x.to(d)).detach().cpu();
  return r;
}

/// Two copies of make()'s model with equal weights trained on the same data, one on the GPU
/// and one on the CPU: {gpu, cpu}.
template <class Make>
std::pair<TrainResult, TrainResult> train_on_both(const Make& make, const Tensor& x,
                                                  const Tensor& y, int steps, bool bf16 = false) {
  auto cpu_model = make(), gpu_model = make();
  gpu_model->load_state_dict(cpu_model->state_dict());
  TrainResult cpu = train(*cpu_model, Device::cpu(), x, y, steps, bf16);
  return {train(*gpu_model, kGpu, x, y, steps, bf16), std::move(cpu)};
}
std::unique_ptr<models::MLP> mlp() { return std::make_unique<models::MLP>(); }
std::shared_ptr<nn::Module> small_resnet18() {
  return models::resnet18({.in_channels = 3, .num_classes = 10, .stem = models::ResNetStem::Cifar});
}

void expect_same_training(
    const TrainResult& gpu, const TrainResult& cpu, double loss_tol, double weight_tol) {
  ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
  for (size_t s = 0; s < cpu.losses.size(); ++s)
    EXPECT_NEAR(gpu.losses[s], cpu.losses[s], loss_tol * (1 + std::abs(cpu.losses[s])))
        << "loss of step " << s;
  EXPECT_TRUE(testing::all_close(
      testing::values_of(gpu.eval_output),
      testing::values_of(cpu.eval_output),
      weight_tol,
      weight_tol))
      << "eval-mode output";
  ASSERT_EQ(gpu.state.size(), cpu.state.size());
  for (size_t i = 0; i < cpu.state.size(); ++i) {
    EXPECT_EQ(gpu.state[i].first, cpu.state[i].first);
    if (!is_floating(cpu.state[i].second.dtype())) {
      EXPECT_TRUE(testing::all_close(
          testing::values_of(gpu.state[i].second), testing::values_of(cpu.state[i].second), 0, 0))
          << cpu.state[i].first;
      continue;
    }
    EXPECT_TRUE(testing::all_close(
        testing::values_of(gpu.state[i].second),
        testing::values_of(cpu.state[i].second),
        weight_tol,
        weight_tol))
        << cpu.state[i].first;
  }
}

TEST(CudaTraining, MlpTrainsLikeTheCpu) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(7);
  Generator g(8);
  const Tensor x = randn({64, 10}, {}, &g), y = randint(0, 10, {64}, {}, &g);
  const auto [gpu, cpu] = train_on_both(mlp, x, y, 6);
  EXPECT_LT(cpu.losses.back(), cpu.losses.front());  // it learns at all
  expect_same_training(gpu, cpu, 1e-5, 1e-5);
}

TEST(CudaTraining, ResNet18TrainsLikeTheCpu) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(9);
  Generator g(10);
  const Tensor x = randn({8, 3, 16, 16}, {}, &g), y = randint(0, 10, {8}, {}, &g);
  const auto [gpu, cpu] = train_on_both(small_resnet18, x, y, 3);
  // Batch norm over few values amplifies the rounding differences of the convolutions, and
  // they compound over steps: looser than one op's tolerance, far tighter than a wrong kernel.
  expect_same_training(gpu, cpu, 1e-3, 5e-3);
  // The first loss is one forward pass from equal weights: float32 rounding through 20 layers.
  EXPECT_NEAR(gpu.losses[0], cpu.losses[0], 1e-4 * (1 + std::abs(cpu.losses[0])));
}

// --amp bf16 on both devices: cuBLASLt's and cuDNN's bf16 kernels against oneDNN's and the
// CPU's, batch norm on bf16 activations with float32 statistics, bf16 gradients into float32
// parameters. Each op rounds to bf16 (8 significant bits, ~4e-3) in its own order on each
// device, hence the tolerances; a wrong kernel is off by far more.
TEST(CudaTraining, Bf16AutocastTrainsLikeTheCpu) {
  IGNIS_REQUIRE_CUDA();
  manual_seed(11);
  Generator g(12);
  const Tensor x = randn({64, 10}, {}, &g), y = randint(0, 10, {64}, {}, &g);
  const auto [gpu_mlp, cpu_mlp] = train_on_both(mlp, x, y, 3, /*bf16=*/true);
  expect_same_training(gpu_mlp, cpu_mlp, 2e-2, 2e-2);
  const Tensor xi = randn({8, 3, 16, 16}, {}, &g), yi = randint(0, 10, {8}, {}, &g);
  const auto [gpu_net, cpu_net] = train_on_both(small_resnet18, xi, yi, 2, /*bf16=*/true);
  expect_same_training(gpu_net, cpu_net, 3e-2, 3e-2);
}

}  // namespace
}  // namespace ignis
