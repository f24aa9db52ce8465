// The multi-tensor CUDA kernels (src/cuda/multi_tensor_optim.cu) against the CPU: SGD, Adam/
// AdamW and RMSprop over many float32 parameters (more tensors and more chunks than one launch
// holds), GradScaler's unscale with its inf/NaN flag in every floating dtype, and all_finite's
// check alone. Both devices run the same element rules without FMA contraction, so the results
// must be bitwise equal.
#include <functional>
#include <limits>
#include <memory>

#include "cuda/cuda_test_util.h"
#include "ignis/amp.h"
#include "ignis/optim/adam.h"
#include "ignis/optim/rmsprop.h"
#include "ignis/optim/sgd.h"

namespace ignis {
namespace {
using testing::kGpu;
using testing::random_tensor;
using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

template <class Opt, class Options>
MakeOptimizer maker(Options o) {
  return [o](std::vector<Tensor> ps) { return std::make_unique<Opt>(std::move(ps), o); };
}

/// 40 parameters (more than the 32 of one launch's table) of odd sizes, one of them
/// `large` elements (set above 320 chunks of 64 Ki to cut a tensor between two launches).
std::vector<int64_t> parameter_sizes(int64_t large) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 40; ++i) sizes.push_back(1 + (i * 7919) % 5003);
  sizes[3] = 0;  // an empty parameter is skipped
  sizes[17] = large;
  return sizes;
}

/// Trains the parameters for 4 steps on `device` and returns parameters and states, on the CPU.
std::vector<Tensor> train(
    const MakeOptimizer& make, const std::vector<int64_t>& sizes, Device device) {
  std::vector<Tensor> params;
  for (size_t i = 0; i < sizes.size(); ++i)
    params.push_back(
        random_tensor({sizes[i]}, -1, 1, 500 + i).to(device, kFloat32).requires_grad_());
  auto opt = make(params);
  for (int step = 0; step < 4; ++step) {
    for (size_t i = 0; i < params.size(); ++i)
      params[i].mutable_grad() =
          i == 5 && step == 1
              ? Tensor()  // one parameter skips a step: its own step count
              : random_tensor({sizes[i]}, -2, 2, 900 + 50 * step + i).to(device, kFloat32);
    opt->step();
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); ++i) {
    out.push_back(params[i].detach().cpu());
    for (const auto& [key, t] : opt->state(0, i))
      if (key != "step") out.push_back(t.cpu());
  }
  return out;
}

TEST(CudaOptim, MultiTensorUpdatesMatchTheCpuBitForBit) {
  IGNIS_REQUIRE_CUDA();
  using namespace optim;
  const std::pair<const char*, MakeOptimizer> cases[] = {
      {"sgd", maker<SGD>(SGDOptions{.lr = 0.1})},
      {"sgd momentum decay",
       maker<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01})},
      {"sgd nesterov",
       maker<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 1e-3, .nesterov = true})},
      {"sgd maximize", maker<SGD>(SGDOptions{.lr = 0.02, .momentum = 0.5, .maximize = true})},
      {"adam", maker<Adam>(AdamOptions{.lr = 0.01})},
      {"adam decay amsgrad maximize",
       maker<Adam>(
           AdamOptions{.lr = 0.01, .weight_decay = 0.1, .amsgrad = true, .maximize = true})},
      {"adamw amsgrad",
       maker<AdamW>(AdamWOptions{.lr = 0.01, .weight_decay = 0.2, .amsgrad = true})},
      {"rmsprop", maker<RMSprop>(RMSpropOptions{.lr = 0.01})},
      {"rmsprop centered momentum decay",
       maker<RMSprop>(
           RMSpropOptions{.lr = 0.01, .weight_decay = 0.1, .momentum = 0.9, .centered = true})},
  };
  for (const auto& [name, make] : cases) {
    // The large parameter (~21.6 M elements) only for the variant with the most state: the
    // CPU side of this test is the slow one.
    const bool large = std::string(name) == "adamw amsgrad";
    const auto sizes = parameter_sizes(large ? 330 * 65536 + 17 : 70001);
    const auto gpu = train(make, sizes, kGpu), cpu = train(make, sizes, Device::cpu());
    ASSERT_EQ(gpu.size(), cpu.size()) << name;
    for (size_t i = 0; i < gpu.size(); ++i)
      EXPECT_TRUE(testing::all_close(testing::values_of(gpu[i]), testing::values_of(cpu[i]), 0, 0))
          << name << ", tensor " << i;
  }
}

/// Gradients of 40 parameters in dtype t on `device`, scaled by 1024; with `poison`, one
/// element deep in a long gradient is `poison`.
std::vector<Tensor> scaled_params(DType t, Device device, double poison) {
  std::vector<Tensor> params;
  for (int i = 0; i < 40; ++i) {
    const int64_t n = i == 20 ? 3 * 65536 + 5 : 1 + (i * 613) % 4001;
    Tensor p = zeros({n}, {t, device}).requires_grad_();
    Tensor g = random_tensor({n}, -4, 4, 70 + i) * 1024;
    if (i == 20 && poison != 0) g.narrow(0, 2 * 65536 + 3, 1).fill_(poison);
    p.mutable_grad() = g.to(device, t);
    params.push_back(p);
  }
  return params;
}

TEST(CudaOptim, UnscaleFindsInfAndNanAndMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const double inf = std::numeric_limits<double>::infinity();
  for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16})
    for (double poison : {0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()}) {
      auto step_with = [&](Device d) {
        auto params = scaled_params(t, d, poison);
        optim::SGD opt(params, {.lr = 0.1});
        amp::GradScaler scaler({.init_scale = 1024});
        scaler.unscale_(opt);
        const bool stepped = scaler.step(opt);
        std::vector<Tensor> grads;
        for (const Tensor& p : params) grads.push_back(p.grad().cpu());
        return std::pair{stepped, grads};
      };
      const auto [gpu_stepped, gpu] = step_with(kGpu);
      const auto [cpu_stepped, cpu] = step_with(Device::cpu());
      EXPECT_EQ(gpu_stepped, poison == 0) << dtype_name(t) << " poison " << poison;
      EXPECT_EQ(gpu_stepped, cpu_stepped) << dtype_name(t) << " poison " << poison;
      for (size_t i = 0; i < gpu.size(); ++i)
        EXPECT_TRUE(
            testing::all_close(testing::values_of(gpu[i]), testing::values_of(cpu[i]), 0, 0))
            << dtype_name(t) << " poison " << poison << ", gradient " << i;
    }
}

// all_finite on the GPU (the multi-tensor check; the strided views through the ops) against
// the same list and poison on the CPU: gradient_like_list's 36 dense float32 tensors take two
// launches; then a tensor longer than one launch's 320 chunks, poisoned past the cut.
TEST(CudaOptim, AllFiniteMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Tensor> clean = testing::gradient_like_list(kGpu, 100);
  const Tensor ok = all_finite(clean);
  EXPECT_EQ(ok.device(), kGpu);
  EXPECT_TRUE(ok.item<bool>());
  uint64_t position = 12345;
  for (size_t k = 0; k < clean.size(); ++k) {
    if (!is_floating(clean[k].dtype()) || clean[k].numel() == 0) continue;
    for (double poison : {inf, -inf, std::numeric_limits<double>::quiet_NaN()}) {
      position = position * 6364136223846793005ull + 1442695040888963407ull;
      auto poisoned = [&](Device d) {
        std::vector<Tensor> list = testing::gradient_like_list(d, 100);
        Tensor e = list[k];
        const int64_t at = int64_t((position >> 17) % uint64_t(e.numel()));
        for (int64_t i : testing::unravel(at, e.sizes())) e = e.select(0, i);
        e.fill_(poison);
        return all_finite(list).item<bool>();
      };
      EXPECT_FALSE(poisoned(kGpu)) << "poison " << poison << " in tensor " << k;
      EXPECT_FALSE(poisoned(Device::cpu())) << "poison " << poison << " in tensor " << k;
    }
  }
  const int64_t cut = 320 * 65536;
  Tensor longest = zeros({cut + 1000}, {kFloat32, kGpu});
  EXPECT_TRUE(all_finite({clean[4], longest, clean[0]}).item<bool>());
  longest.narrow(0, cut + 500, 1).fill_(std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(all_finite({clean[4], longest, clean[0]}).item<bool>());
  if (!testing::dry_run_on_cpu())
    EXPECT_THROW(all_finite({ones({2}, {kFloat32, kGpu}), ones({2})}), DeviceError);
}

}  // namespace
}  // namespace ignis
