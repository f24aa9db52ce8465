// The multi-tensor optimizer path (src/optim/multi_tensor_update.cpp and the CPU kernel of
// src/ops/optim_kernels.h): float32 parameters updated by the fused rules against the same
// parameters updated op by op (transposed parameters with row-major gradients, which the
// kernel refuses), every option
// of SGD, Adam/AdamW and RMSprop, parameters and states. Both round once per op, except that
// the compiler fuses the ops' a + alpha * b into one FMA where the fused rules (built without
// contraction, to match the GPU bit for bit) round twice: hence a few ulp of tolerance, more
// where centered RMSprop's sqrt(v - a^2) cancels (5.6e-6 relative seen). The
// kernel is watched through its slot, so a test cannot pass by both runs taking the op path.
#include <functional>
#include <memory>

#include "ignis/optim/adam.h"
#include "ignis/optim/rmsprop.h"
#include "ignis/optim/sgd.h"
#include "core/graph_capture.h"
#include "ops/optim_kernels.h"
#include "support/test_support.h"

namespace ignis {
namespace {

using testing::all_close;
using testing::random_values;
using testing::values_of;
using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct OptimCase {
  const char* name;
  MakeOptimizer make;
};

template <class Opt, class Options>
OptimCase make_case(const char* name, Options o) {
  return {name, [o](std::vector<Tensor> ps) { return std::make_unique<Opt>(std::move(ps), o); }};
}

std::vector<OptimCase> every_option() {
  using namespace optim;
  return {
      make_case<SGD>("sgd", SGDOptions{.lr = 0.1}),
      make_case<SGD>("sgd momentum", SGDOptions{.lr = 0.05, .momentum = 0.9}),
      make_case<SGD>(
          "sgd dampening decay",
          SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01}),
      make_case<SGD>(
          "sgd nesterov",
          SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 1e-3, .nesterov = true}),
      make_case<SGD>("sgd maximize", SGDOptions{.lr = 0.02, .momentum = 0.5, .maximize = true}),
      make_case<Adam>("adam", AdamOptions{.lr = 0.01}),
      make_case<Adam>(
          "adam decay amsgrad",
          AdamOptions{
              .lr = 0.01, .betas = {0.8, 0.95}, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true}),
      make_case<Adam>(
          "adam maximize", AdamOptions{.lr = 0.02, .weight_decay = 0.05, .maximize = true}),
      make_case<AdamW>("adamw", AdamWOptions{.lr = 0.01, .weight_decay = 0.1}),
      make_case<AdamW>(
          "adamw amsgrad maximize",
          AdamWOptions{.lr = 0.01, .weight_decay = 0.2, .amsgrad = true, .maximize = true}),
      make_case<RMSprop>("rmsprop", RMSpropOptions{.lr = 0.01}),
      make_case<RMSprop>(
          "rmsprop momentum decay",
          RMSpropOptions{.lr = 0.01, .alpha = 0.9, .weight_decay = 0.1, .momentum = 0.9}),
      make_case<RMSprop>(
          "rmsprop centered",
          RMSpropOptions{.lr = 0.01, .eps = 1e-6, .momentum = 0.5, .centered = true}),
      make_case<RMSprop>(
          "rmsprop centered maximize",
          RMSpropOptions{.lr = 0.005, .centered = true, .maximize = true}),
  };
}

// Counts calls of the CPU multi-tensor kernel while alive (the slot's function, wrapped).
int kernel_calls = 0;
void (*real_kernel)(const detail::MultiTensorUpdateArgs&) = nullptr;
void counting_kernel(const detail::MultiTensorUpdateArgs& a) {
  ++kernel_calls;
  real_kernel(a);
}
struct CountKernelCalls {
  CountKernelCalls() {
    real_kernel = detail::multi_tensor_update_kernel.get(Device::cpu());
    detail::multi_tensor_update_kernel.set(DeviceType::CPU, &counting_kernel);
    kernel_calls = 0;
  }
  ~CountKernelCalls() { detail::multi_tensor_update_kernel.set(DeviceType::CPU, real_kernel); }
};

const std::vector<Shape> kShapes = {{3, 4}, {7, 5}, {2, 33}};
constexpr int kSteps = 5;

/// The same logical values laid out column-major (a transposed copy): dense, not contiguous.
Tensor column_major(const Tensor& t) { return t.t().contiguous().t(); }

/// How a run lays out its parameters and gradients.
enum class Layout {
  Contiguous,          // everything row-major
  TransposedParams,    // column-major parameters, row-major gradients: the kernel refuses
  TransposedEverything  // parameters and gradients column-major alike: the kernel takes them
};

/// What a run leaves: every parameter's values, then every state tensor's ("step" aside).
std::vector<std::vector<double>> train(const OptimCase& c, Layout layout) {
  std::vector<Tensor> params;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    Tensor base = tensor(random_values(kShapes[i][0] * kShapes[i][1], -1, 1, 40 + i), kShapes[i])
                      .to(kFloat32);
    params.push_back(
        (layout == Layout::Contiguous ? base.clone() : column_major(base)).requires_grad_());
  }
  auto opt = c.make(params);
  for (int step = 0; step < kSteps; ++step) {
    for (size_t i = 0; i < params.size(); ++i) {
      // Parameter 1 has no gradient at step 2: its step count falls behind the others'.
      Tensor g = i == 1 && step == 2
                     ? Tensor()
                     : tensor(random_values(params[i].numel(), -2, 2, 100 * step + i), kShapes[i])
                           .to(kFloat32);
      params[i].mutable_grad() =
          g.defined() && layout == Layout::TransposedEverything ? column_major(g) : g;
    }
    opt->step();
  }
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < params.size(); ++i) {
    out.push_back(values_of(params[i]));
    for (const auto& [key, t] : opt->state(0, i))
      if (key != "step") out.push_back(values_of(t));
  }
  return out;
}

TEST(MultiTensorUpdate, FusedFloat32MatchesTheOps) {
  for (const OptimCase& c : every_option()) {
    CountKernelCalls count;
    const auto fused = train(c, Layout::Contiguous);
    EXPECT_EQ(kernel_calls, kSteps) << c.name << ": one kernel call per step for all parameters";
    kernel_calls = 0;
    const auto ops = train(c, Layout::TransposedParams);
    EXPECT_EQ(kernel_calls, 0)
        << c.name << ": gradients laid out unlike their parameters take the ops";
    ASSERT_EQ(fused.size(), ops.size()) << c.name;
    for (size_t i = 0; i < fused.size(); ++i)
      EXPECT_TRUE(all_close(fused[i], ops[i], 2e-5, 1e-7)) << c.name << ", tensor " << i;
  }
}

// Parameters, gradients and (new) states that share a dense non-contiguous layout — a
// channels-last convolution weight's case — take the kernel too, element for element as the
// contiguous run.
TEST(MultiTensorUpdate, DenseNonContiguousLayoutsTakeTheKernel) {
  for (const OptimCase& c : every_option()) {
    CountKernelCalls count;
    const auto contiguous = train(c, Layout::Contiguous);
    kernel_calls = 0;
    const auto transposed = train(c, Layout::TransposedEverything);
    EXPECT_EQ(kernel_calls, kSteps) << c.name;
    ASSERT_EQ(contiguous.size(), transposed.size()) << c.name;
    for (size_t i = 0; i < contiguous.size(); ++i)
      EXPECT_TRUE(all_close(contiguous[i], transposed[i], 0, 0)) << c.name << ", tensor " << i;
  }
}

TEST(MultiTensorUpdate, Float64AndMixedGroupsStillTakeTheOps) {
  // A float64 parameter beside a float32 one: the kernel gets the float32 one only, and the
  // float64 one moves as the per-parameter rule moves it.
  Tensor a = tensor(random_values(6, -1, 1, 1), Shape{6}).to(kFloat32).requires_grad_();
  Tensor b = tensor(random_values(6, -1, 1, 2), Shape{6}).requires_grad_();
  Tensor b_alone = b.detach().clone().requires_grad_();
  optim::Adam mixed({a, b}, {.lr = 0.1});
  optim::Adam alone({b_alone}, {.lr = 0.1});
  CountKernelCalls count;
  for (int step = 0; step < 3; ++step) {
    const Tensor g = tensor(random_values(6, -1, 1, 10 + step), Shape{6});
    a.mutable_grad() = g.to(kFloat32);
    b.mutable_grad() = g;
    b_alone.mutable_grad() = g;
    mixed.step();
    alone.step();
  }
  EXPECT_EQ(kernel_calls, 3);
  EXPECT_TRUE(all_close(values_of(b), values_of(b_alone), 0, 0));
}

TEST(MultiTensorUpdate, ACaptureTakesThePerParameterPath) {
  // Inside a CUDA graph capture the step values would come from pinned host memory that a
  // replay reads as it is then; SGD's own path reads the device learning rate instead. The
  // capture state is per thread and device-independent, so the CPU shows the routing.
  Tensor p = tensor(random_values(8, -1, 1, 3), Shape{8}).to(kFloat32).requires_grad_();
  Tensor q = p.detach().clone().requires_grad_();
  optim::SGD captured({p}, {.lr = 0.1, .momentum = 0.9});
  optim::SGD eager({q}, {.lr = 0.1, .momentum = 0.9});
  CountKernelCalls count;
  for (int step = 0; step < 2; ++step) {
    const Tensor g = tensor(random_values(8, -1, 1, 20 + step), Shape{8}).to(kFloat32);
    p.mutable_grad() = g;
    q.mutable_grad() = g;
    std::vector<detail::ReplayHook> hooks;
    detail::set_capture_sink(&hooks);
    captured.step();
    detail::set_capture_sink(nullptr);
    EXPECT_EQ(kernel_calls, step) << "no kernel call inside the capture";
    eager.step();
    EXPECT_EQ(kernel_calls, step + 1) << "the kernel outside it";
  }
  EXPECT_TRUE(all_close(values_of(p), values_of(q), 2e-6, 1e-7));
}

}  // namespace
}  // namespace ignis
