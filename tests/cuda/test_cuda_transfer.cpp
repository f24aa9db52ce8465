// Copies between the host and the GPU and on the GPU: every dtype round-trips exactly,
// non-contiguous sources and destinations land in the right places, conversions match the
// CPU's, and pinned memory copies asynchronously yet correctly.
#include <functional>

#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
using testing::equals_cpu;
using testing::kGpu;
using testing::make_input;
using testing::random_values;
using testing::values_of;

constexpr DType kAllDTypes[] = {
    kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kUInt8, kBool};

TEST(CudaTransfer, EveryDTypeRoundTripsExactly) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(1003, -100, 100, 1);
  for (DType t : kAllDTypes) {
    const Tensor cpu = make_input(v, {17, 59}, t);
    const Tensor gpu = cpu.to(kGpu);
    ASSERT_TRUE(gpu.is_cuda());
    EXPECT_TRUE(equals_cpu(gpu, cpu)) << dtype_name(t);
  }
}

TEST(CudaTransfer, NonContiguousSourcesAndDestinations) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(24 * 35, -5, 5, 2);
  for (testing::Layout l : testing::kAllLayouts) {
    const Tensor cpu = make_input(v, {24, 35}, kFloat32, l);
    EXPECT_TRUE(equals_cpu(cpu.to(kGpu), cpu)) << testing::layout_name(l);
  }
  // GPU views (transposed, strided, offset) read by the strided copy kernel, and back.
  const Tensor base = make_input(random_values(35 * 48, -5, 5, 6), {35, 48}, kFloat32);
  const Tensor gbase = base.to(kGpu);
  const std::function<Tensor(const Tensor&)> views[] = {
      [](const Tensor& b) { return b.t(); },
      [](const Tensor& b) { return b.slice(1, 0, 48, 2); },
      [](const Tensor& b) { return b.narrow(0, 5, 20).narrow(1, 3, 40); },
      [](const Tensor& b) {
        return b.view({5, 7, 48}).permute({2, 0, 1});
      },
  };
  for (const auto& view : views) {
    EXPECT_TRUE(equals_cpu(view(gbase).contiguous(), view(base).contiguous()));
    EXPECT_EQ(values_of(view(gbase).cpu()), values_of(view(base)));
  }
  // Copy into a strided GPU destination (every other column).
  Tensor dst = zeros({6, 10}, TensorOptions(kFloat64, kGpu));
  Tensor cols = dst.narrow(1, 0, 10).slice(1, 0, 10, 2);
  cols.copy_(arange(30, kFloat64).view({6, 5}));
  Tensor expect = zeros({6, 10}, kFloat64);
  expect.slice(1, 0, 10, 2).copy_(arange(30, kFloat64).view({6, 5}));
  EXPECT_TRUE(equals_cpu(dst, expect));
}

TEST(CudaTransfer, ConversionsMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  std::vector<double> v = random_values(4001, -300, 300, 3);
  v[0] = 0.5, v[1] = -0.5, v[2] = 1.5, v[3] = 255.0, v[4] = 0;  // rounding / bool edges
  for (DType from : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32}) {
    const Tensor cpu = make_input(v, {4001}, from);
    const Tensor gpu = cpu.to(kGpu);
    // Negative values wrap into uint8 on both devices (-1.0 -> 255, as PyTorch's CPU; a
    // device's own conversion to an unsigned type would clamp at 0: src/kernels/convert.h).
    for (DType to : kAllDTypes) {
      EXPECT_TRUE(equals_cpu(gpu.to(to), cpu.to(to)))
          << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

TEST(CudaTransfer, PinnedMemoryCopiesAsynchronously) {
  IGNIS_REQUIRE_CUDA();
  const Tensor host = arange(1 << 22, kFloat32);
  const Tensor pinned = host.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(host.is_pinned());
  EXPECT_TRUE(pinned.pin_memory().is_pinned());
  EXPECT_EQ(values_of(pinned.narrow(0, 0, 5)), values_of(host.narrow(0, 0, 5)));
  Tensor gpu = pinned.to(kGpu, /*non_blocking=*/true);
  // Ordered on the stream: the kernel below runs after the copy.
  Tensor doubled = gpu * 2;
  EXPECT_TRUE(equals_cpu(doubled, host * 2));
  // Freeing the pinned source right after an async copy is safe: its block is reused only
  // after the copy (the allocator recorded the stream). Busy work queued first keeps the copy
  // waiting while p3 is pinned and written, so a block handed out early would be copied as
  // zeros.
  const Tensor zeros_host = zeros({1 << 22}, kFloat32);
  const Tensor a = randn({8192, 8192}, {kFloat32, kGpu}) * (1.0 / 90.5);
  Tensor busy = a;
  for (int i = 0; i < 8; ++i) busy = matmul(busy, a);  // eight 8192^3 float32 products
  Tensor g2;
  {
    Tensor p2 = (host + 1).pin_memory();
    g2 = p2.to(kGpu, true);
  }
  Tensor p3 = zeros_host.pin_memory();  // would take p2's block if the stream were not recorded
  EXPECT_FALSE(cuda::current_stream().query()) << "the busy work ended before the check";
  EXPECT_TRUE(equals_cpu(g2, host + 1));
  EXPECT_EQ(p3.sum().item<double>(), 0.0);
}

TEST(CudaTransfer, CloneAndViewsStayOnTheDevice) {
  IGNIS_REQUIRE_CUDA();
  const Tensor cpu = make_input(random_values(60, -1, 1, 5), {3, 4, 5}, kFloat32);
  const Tensor gpu = cpu.to(kGpu);
  EXPECT_TRUE(equals_cpu(gpu.clone(), cpu));
  EXPECT_TRUE(equals_cpu(gpu.permute({2, 0, 1}).contiguous(), cpu.permute({2, 0, 1}).contiguous()));
  EXPECT_TRUE(equals_cpu(gpu.reshape({12, 5}), cpu.reshape({12, 5})));
  EXPECT_EQ(gpu.to(kGpu).impl(), gpu.impl());  // same device: no copy
}

TEST(CudaTransfer, FactoriesOnTheDevice) {
  IGNIS_REQUIRE_CUDA();
  for (DType t : kAllDTypes) {
    EXPECT_TRUE(equals_cpu(zeros({5, 7}, TensorOptions(t, kGpu)), zeros({5, 7}, t)));
    EXPECT_TRUE(equals_cpu(ones({5, 7}, TensorOptions(t, kGpu)), ones({5, 7}, t)));
    EXPECT_TRUE(equals_cpu(full({33}, 3, TensorOptions(t, kGpu)), full({33}, 3, t)));
  }
  EXPECT_TRUE(equals_cpu(arange(1000, TensorOptions(kFloat32, kGpu)), arange(1000, kFloat32)));
  // start + i * step rounded twice on both devices (no FMA: the GPU kernel's explicitly
  // rounded operations, -ffp-contract=off for the CPU's range kernel): the same bits.
  EXPECT_TRUE(equals_cpu(
      arange(-3, 7.5, 0.1, TensorOptions(kFloat64, kGpu)), arange(-3, 7.5, 0.1, kFloat64)));
  EXPECT_TRUE(equals_cpu(
      linspace(-1, 1, 101, TensorOptions(kFloat64, kGpu)), linspace(-1, 1, 101, kFloat64)));
  EXPECT_TRUE(equals_cpu(arange(100, TensorOptions(kInt64, kGpu)), arange(100, kInt64)));
}

}  // namespace
}  // namespace ignis
