// nn::functional::linear(x, w, b, Activation::ReLU) on the GPU (src/cuda/linear_act.cu: the
// product with the bias in cuBLASLt's epilogue, then the ReLU; backward masks the gradient
// and sums the bias gradient in one pass) against the CPU: forward values, NaN and -0
// handling, strided operands, bf16/fp16, and the three gradients, including batches long
// enough to split the bias gradient's column sums into many chunks.
#include <cmath>
#include <limits>

#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
namespace F = nn::functional;
using testing::kGpu;
using testing::matches_cpu;
using testing::random_tensor;

struct Shape3 {
  int64_t m, n, k;
};
// The MLP's first layer, odd sizes (partial tiles, bias not a multiple of 4 elements), k = 1,
// and 70,000 rows: the backward's column sums run over 1,094 chunks.
constexpr Shape3 kShapes[] = {{64, 512, 10}, {37, 129, 77}, {5, 3, 1}, {70000, 24, 16}};

/// Random multiples of `step` in [-1, 1]. With x, w and b multiples of 1/2 and the output
/// weights multiples of 1/8, every product and sum below is exact in float32 (the largest,
/// a weight-gradient sum over 70,000 rows, needs 21 bits), whatever order either device sums
/// in, so no pre-activation rounds across zero on one device only (the ReLU masks agree) and
/// the results can be compared exactly.
Tensor dyadic(const Shape& shape, double step, uint64_t seed) {
  std::vector<double> v = testing::random_values(shape[0] * (shape.size() > 1 ? shape[1] : 1),
                                                 -1, 1, seed);
  for (double& x : v) x = std::round(x / step) * step;
  return testing::make_input(v, shape, kFloat32);
}

TEST(CudaLinearAct, ReluForwardAndGradientsMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  uint64_t seed = 1;
  for (const Shape3& s : kShapes)
    for (bool bias : {true, false})
      for (bool transposed_x : {false, true}) {
        SCOPED_TRACE(
            ::testing::Message() << s.m << "x" << s.n << "x" << s.k << " bias " << bias
                                 << " transposed x " << transposed_x);
        const Tensor x0 = dyadic({s.m, s.k}, 0.5, seed++);
        const Tensor w0 = dyadic({s.n, s.k}, 0.5, seed++);
        const Tensor b0 = dyadic({s.n}, 0.5, seed++);
        const Tensor r = dyadic({s.m, s.n}, 0.125, seed++);
        auto run = [&](Device d) {
          // A transposed x is read through its strides (cuBLASLt's op T), not copied.
          Tensor x = transposed_x ? x0.t().contiguous().to(d).t() : x0.to(d);
          x = x.detach().requires_grad_();
          Tensor w = w0.to(d).requires_grad_(), b = b0.to(d).requires_grad_();
          Tensor y = F::linear(x, w, bias ? b : Tensor(), F::Activation::ReLU);
          (y * r.to(d)).sum().backward();
          return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), bias ? b.grad() : Tensor()};
        };
        const auto gpu = run(kGpu), cpu = run(Device::cpu());
        // Exact (see dyadic): any difference is a wrong element, not rounding.
        EXPECT_TRUE(matches_cpu(gpu[0], cpu[0], 0, 0)) << "output";
        EXPECT_TRUE(matches_cpu(gpu[1], cpu[1], 0, 0)) << "x gradient";
        EXPECT_TRUE(matches_cpu(gpu[2], cpu[2], 0, 0)) << "w gradient";
        if (bias) EXPECT_TRUE(matches_cpu(gpu[3], cpu[3], 0, 0)) << "bias gradient";
      }
}

TEST(CudaLinearAct, ReluKeepsNaNAndGivesPositiveZero) {
  IGNIS_REQUIRE_CUDA();
  Tensor x = random_tensor({6, 4}, -1, 1, 21).to(kFloat32);
  x.narrow(0, 1, 1).narrow(1, 1, 1).fill_(std::numeric_limits<double>::quiet_NaN());
  // Row 4 is all zeros with a zero bias column 0: the product is -0 + 0 or 0; relu gives +0.
  x.narrow(0, 4, 1).zero_();
  const Tensor w = random_tensor({32, 4}, -1, 1, 22).to(kFloat32);
  Tensor b = random_tensor({32}, -1, 1, 23).to(kFloat32);
  b.narrow(0, 0, 1).fill_(-0.0);
  const Tensor gpu = F::linear(x.to(kGpu), w.to(kGpu), b.to(kGpu), F::Activation::ReLU);
  const Tensor cpu = F::linear(x, w, b, F::Activation::ReLU);
  EXPECT_TRUE(matches_cpu(gpu, cpu, 1e-5, 1e-6));
  const auto v = testing::values_of(gpu.cpu());
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(std::isnan(v[i]), i / 32 == 1) << "element " << i;
    if (!std::isnan(v[i])) EXPECT_FALSE(std::signbit(v[i])) << "element " << i;
  }
}

TEST(CudaLinearAct, LowPrecisionReluMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  // bf16/fp16 accumulate in float32 in cuBLASLt and round once after the bias; the CPU rounds
  // the product and then the sum: a bf16 ulp or so apart.
  for (DType t : {kBFloat16, kFloat16}) {
    const Tensor x = random_tensor({48, 40}, -1, 1, 31).to(t);
    const Tensor w = random_tensor({72, 40}, -1, 1, 32).to(t);
    const Tensor b = random_tensor({72}, -1, 1, 33).to(t);
    const Tensor gpu = F::linear(x.to(kGpu), w.to(kGpu), b.to(kGpu), F::Activation::ReLU);
    const Tensor cpu = F::linear(x, w, b, F::Activation::ReLU);
    const double tol = t == kBFloat16 ? 2e-2 : 2e-3;
    EXPECT_TRUE(matches_cpu(gpu, cpu, tol, tol)) << dtype_name(t);
  }
}

}  // namespace
}  // namespace ignis
