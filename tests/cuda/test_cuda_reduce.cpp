// CUDA reductions against the CPU: every ReduceOp along inner, outer and several dims and
// over everything, through each kernel shape (a warp per output, a block per output, and the
// chunked two-pass path for few long reductions), with NaN and ties for the index ops.
// The GPU accumulates floating reductions in double: its float results are the CPU's float64
// results rounded once; max/min/argmax/argmin/all/any and integer sums agree exactly.
#include <cmath>
#include <functional>

#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
using testing::equals_cpu;
using testing::kGpu;
using testing::make_input;
using testing::matches_cpu;
using testing::random_values;

using Reduction = std::function<Tensor(const Tensor&)>;

struct Case {
  const char* name;
  Reduction f;
  bool exact;
};

std::vector<Case> cases_over(const Shape& dims) {
  return {
      {"sum", [dims](const Tensor& x) { return sum(x, dims); }, false},
      {"mean", [dims](const Tensor& x) { return mean(x, dims); }, false},
      {"prod", [dims](const Tensor& x) { return prod(x, dims); }, false},
      {"var", [dims](const Tensor& x) { return var(x, dims); }, false},
      {"std", [dims](const Tensor& x) { return std(x, dims, 0); }, false},
      {"norm2", [dims](const Tensor& x) { return norm(x, 2, dims); }, false},
      {"norm1", [dims](const Tensor& x) { return norm(x, 1, dims); }, false},
      {"norm3", [dims](const Tensor& x) { return norm(x, 3, dims); }, false},
      {"logsumexp", [dims](const Tensor& x) { return logsumexp(x, dims); }, false},
      {"amax", [dims](const Tensor& x) { return amax(x, dims); }, true},
      {"amin", [dims](const Tensor& x) { return amin(x, dims); }, true},
      {"all", [dims](const Tensor& x) { return all(gt(x, -0.9), dims); }, true},
      {"any", [dims](const Tensor& x) { return any(gt(x, 0.999), dims); }, true},
  };
}

/// Shapes and dims that reach each kernel shape: (outputs, reduced) = (many, short) -> a warp
/// each; (many, long) -> a block each; (1, 2^21) -> chunks + second pass.
struct Shaped {
  Shape shape;
  Shape dims;
};
const Shaped kShapes[] = {
    {{300, 17}, {1}},      // inner, short: warp per output
    {{300, 17}, {0}},      // outer: strided reads
    {{12, 5000}, {1}},     // inner, long: block per output
    {{8, 9, 10}, {0, 2}},  // two non-adjacent dims
    {{4, 1 << 19}, {}},    // everything, 2^21 elements: chunked two-pass
    {{3, 1 << 18}, {1}},   // few long rows: chunked per output
};

TEST(CudaReduce, ValueReductionsMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  for (const Shaped& s : kShapes) {
    const int64_t n = detail::shape_numel(s.shape);
    const std::vector<double> v = random_values(n, -1, 1, 41 + uint64_t(n));
    for (DType t : {kFloat32, kFloat64, kBFloat16}) {
      const Tensor cpu = make_input(v, s.shape, t), gpu = cpu.to(kGpu);
      const Tensor cpu64 = cpu.to(kFloat64);
      for (const Case& c : cases_over(s.dims)) {
        // The GPU accumulates every floating reduction in double and rounds once, so its
        // result is the CPU's float64 result rounded to the dtype (the CPU's own float32
        // sums use float partial sums, a less exact oracle). Up to one ulp of the dtype
        // (double rounding through float for bfloat16) and the summation order in double.
        const Tensor expected = c.exact ? c.f(cpu) : c.f(cpu64).to(c.f(cpu).dtype());
        const double rtol = c.exact ? 0 : (t == kBFloat16 ? 8e-3 : t == kFloat32 ? 2.5e-7 : 1e-12);
        EXPECT_TRUE(matches_cpu(c.f(gpu), expected, rtol, c.exact ? 0 : 1e-9))
            << c.name << " " << dtype_name(t) << " over " << s.dims.size() << " dims of " << n;
      }
    }
  }
}

TEST(CudaReduce, IntegerSumsAreExact) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(1 << 20, -1000, 1000, 51);
  for (DType t : {kInt32, kInt64, kUInt8, kBool}) {
    const Tensor cpu = make_input(v, {1 << 10, 1 << 10}, t), gpu = cpu.to(kGpu);
    EXPECT_TRUE(equals_cpu(sum(gpu), sum(cpu))) << dtype_name(t);
    EXPECT_TRUE(equals_cpu(sum(gpu, {0}), sum(cpu, {0}))) << dtype_name(t);
    EXPECT_TRUE(equals_cpu(sum(gpu, {1}, true), sum(cpu, {1}, true))) << dtype_name(t);
    EXPECT_TRUE(equals_cpu(amax(gpu, {1}), amax(cpu, {1}))) << dtype_name(t);
  }
}

TEST(CudaReduce, ArgMaxArgMinTiesAndNaN) {
  IGNIS_REQUIRE_CUDA();
  // Values from a small set: many ties, so the first index must win on both devices.
  std::vector<double> v = random_values(64 * 3000, 0, 4, 61);
  for (double& x : v) x = std::floor(x);
  for (const Shape& shape : {Shape{64, 3000}, Shape{3000, 64}}) {
    const Tensor cpu = make_input(v, shape, kFloat32), gpu = cpu.to(kGpu);
    for (int64_t d : {0, 1}) {
      EXPECT_TRUE(equals_cpu(argmax(gpu, d), argmax(cpu, d))) << d;
      EXPECT_TRUE(equals_cpu(argmin(gpu, d), argmin(cpu, d))) << d;
    }
    EXPECT_TRUE(equals_cpu(argmax(gpu), argmax(cpu)));
    EXPECT_TRUE(equals_cpu(argmin(gpu), argmin(cpu)));
    const auto [gv, gi] = max(gpu, 1);
    const auto [cv, ci] = max(cpu, 1);
    EXPECT_TRUE(equals_cpu(gv, cv));
    EXPECT_TRUE(equals_cpu(gi, ci));
  }
  // NaN wins max/argmax (its first occurrence), on the chunked path too.
  std::vector<double> w = random_values(1 << 21, -1, 1, 62);
  w[123457] = std::nan("");
  w[1900000] = std::nan("");
  const Tensor cpu = make_input(w, {1 << 21}, kFloat32), gpu = cpu.to(kGpu);
  EXPECT_EQ(argmax(gpu).item<int64_t>(), 123457);
  EXPECT_TRUE(equals_cpu(argmax(gpu), argmax(cpu)));
  EXPECT_TRUE(equals_cpu(max(gpu), max(cpu)));
  EXPECT_TRUE(equals_cpu(argmin(gpu), argmin(cpu)));
}

TEST(CudaReduce, NonContiguousInputs) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(60 * 70, -2, 2, 71);
  const Tensor cpu = make_input(v, {60, 70}, kFloat64), gpu = cpu.to(kGpu);
  // The engines add the 60 values in different orders (a warp's lanes then a shuffle tree;
  // the CPU's row blocks): sums that nearly cancel (column 22's is 0.00165) differ in relative
  // terms far more than 1e-13, so the bound is also absolute, ~100 roundings of values <= 2.
  EXPECT_TRUE(matches_cpu(sum(gpu.t(), {1}), sum(cpu.t(), {1}), 1e-13, 1e-12));
  EXPECT_TRUE(matches_cpu(
      mean(gpu.slice(1, 0, 70, 3), {0}), mean(cpu.slice(1, 0, 70, 3), {0}), 1e-13, 1e-13));
  EXPECT_TRUE(equals_cpu(argmax(gpu.t(), 1), argmax(cpu.t(), 1)));
}

}  // namespace
}  // namespace ignis
