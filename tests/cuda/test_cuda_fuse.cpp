// Fused elementwise functions on the GPU (src/cuda/fuse.cu: one thread per element runs the
// program in registers) against the CPU's fused kernel: values over dtypes, layouts and
// broadcasting, several outputs, gradients, and a program too large for the kernel's
// arguments (run op by op).
#include "cuda/cuda_test_util.h"
#include "ignis/fuse.h"
#include "ops/fuse_cases.h"

namespace ignis {
namespace {
using testing::kGpu;
using testing::matches_cpu;
using testing::random_tensor;

const auto& every_op = ignis::testing::every_fused_op;

TEST(CudaFuse, EveryOpMatchesTheCpuInEveryDtypeAndLayout) {
  IGNIS_REQUIRE_CUDA();
  const auto fused = fuse(every_op, "every_op");
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    // x transposed, y a row broadcast over x's rows.
    const Tensor x = random_tensor({1037, 3}, 0.2, 2, 1).to(dt).t();
    const Tensor y = random_tensor({1037}, -1.5, 1.5, 2).to(dt);
    const Tensor cpu = fused(x, y);
    const Tensor gpu = fused(x.to(kGpu), y.to(kGpu));
    // The device's libm (exp, log, tanh …) may differ from the host's in the last place.
    const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 1e-2;
    EXPECT_TRUE(matches_cpu(gpu, cpu, tol, tol));
  }
}

TEST(CudaFuse, SeveralOutputsAndLargeOrStridedTensors) {
  IGNIS_REQUIRE_CUDA();
  const auto f = fuse([](auto x, auto s) { return std::make_tuple(x * s, relu(x - 0.5), x); }, "three");
  // 3M elements (a grid-stride loop), a 0-dim scale, a strided view.
  const Tensor x = random_tensor({3, 1000001}, -1, 1, 3).to(kFloat32);
  const Tensor s = random_tensor({}, 1, 2, 4).to(kFloat32);
  const Tensor strided = x.slice(1, 0, 1000001, 2);
  for (const Tensor& in : {x, strided}) {
    const auto [a, b, c] = f(in, s);
    const auto [ga, gb, gc] = f(in.to(kGpu), s.to(kGpu));
    EXPECT_TRUE(matches_cpu(ga, a, 0, 0));
    EXPECT_TRUE(matches_cpu(gb, b, 0, 0));
    EXPECT_TRUE(matches_cpu(gc, c, 0, 0));
  }
}

TEST(CudaFuse, GradientsMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const Tensor x0 = random_tensor({6, 41}, 0.2, 2, 5), y0 = random_tensor({41}, -1.5, 1.5, 6);
  const Tensor w = random_tensor({6, 41}, -1, 1, 7);
  const auto check = [&](const auto& fused) {
    const auto grads = [&](Device d) {
      // Leaves of their own (to(cpu) of a CPU tensor is the tensor itself).
      Tensor x = x0.to(d).detach().requires_grad_(), y = y0.to(d).detach().requires_grad_();
      (fused(x, y) * w.to(d)).sum().backward();
      return std::make_pair(x.grad(), y.grad());
    };
    const auto [cx, cy] = grads(Device::cpu());
    const auto [gx, gy] = grads(kGpu);
    EXPECT_TRUE(matches_cpu(gx, cx, 1e-11, 1e-11));
    EXPECT_TRUE(matches_cpu(gy, cy, 1e-11, 1e-11));
  };
  // every_op's gradient program is too long for the kernel (it runs op by op); the small
  // function's runs in the kernel.
  check(fuse(every_op, "every_op"));
  check(fuse([](auto x, auto y) { return sigmoid(x * y) + tanh(y) * x; }, "small"));
}

TEST(CudaFuse, ProgramsTooLargeForTheKernelRunOpByOp) {
  IGNIS_REQUIRE_CUDA();
  // 200 instructions: more than the kernel's argument holds.
  const auto long_chain = fuse([](auto x) {
    auto t = x;
    for (int i = 0; i < 100; ++i) t = tanh(t) * 1.01;
    return t;
  }, "long_chain");
  const Tensor x = random_tensor({1000}, -2, 2, 8).to(kFloat32);
  // A hundred roundings carried along (the map contracts by only ~0.98 a step near its fixed
  // point, and the gradient multiplies a hundred factors): a device whose tanh rounds a few
  // ulps another way drifts ~1e-5 relative. A missing or wrong step differs by far more.
  EXPECT_TRUE(matches_cpu(long_chain(x.to(kGpu)), long_chain(x), 1e-4, 1e-6));
  // Op by op, the ops record the gradients.
  Tensor xc = x.clone().requires_grad_(), xg = x.to(kGpu).detach().requires_grad_();
  long_chain(xc).sum().backward();
  long_chain(xg).sum().backward();
  ASSERT_TRUE(xg.grad().defined());
  EXPECT_TRUE(matches_cpu(xg.grad(), xc.grad(), 1e-4, 1e-6));
}

}  // namespace
}  // namespace ignis
