// The CUDA elementwise engine against the CPU: every unary and binary functor on the dtypes
// it accepts, through each launch path — vectorised (contiguous, 16-byte aligned, with a
// tail), strided with 32-bit offsets (transposed, sliced, misaligned views, broadcasts) and
// strided with 64-bit offsets (a view spanning more than 2^31 elements).
// Ops that are exact in IEEE arithmetic must match bit for bit; transcendental functions
// within a few ulp (CUDA's and glibc's libm differ in the last bits).
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

using View = std::function<Tensor(const Tensor&)>;

/// Views that take each launch path: base is a contiguous [40, 51] tensor (2040 elements);
/// a unary op's output takes its input's layout, so the transposed view runs contiguous.
const std::vector<std::pair<const char*, View>>& views() {
  static const std::vector<std::pair<const char*, View>> v = {
      {"contiguous", [](const Tensor& b) { return b; }},
      {"transposed", [](const Tensor& b) { return b.t(); }},
      {"every other column", [](const Tensor& b) { return b.slice(1, 0, 51, 2); }},
      {"misaligned", [](const Tensor& b) { return b.view({-1}).narrow(0, 1, 2039); }},
      // Aligned but of odd length: the vectorised loop's scalar tail.
      {"aligned odd length", [](const Tensor& b) { return b.view({-1}).narrow(0, 0, 2039); }},
  };
  return v;
}

/// Tolerance of transcendental results stored in dtype: a few ulp of that dtype.
double ulp_rtol(DType t) {
  switch (t) {
    case kFloat64:
      return 1e-14;
    case kFloat32:
      return 2e-6;
    case kFloat16:
      return 1e-3;
    default:
      return 8e-3;  // bfloat16
  }
}

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> f;
  double lo, hi;  // input range
  bool exact;     // IEEE-exact: bit-identical on both devices
  bool floating_only;
  /// atol = rtol * atol_scale. gelu's 0.5 x (1 + erf(...)) cancels for x in [-5, -2]: an ulp
  /// of erf's or tanh's result (CUDA's and glibc's differ) moves it by up to 0.5 |x| ulp(1).
  double atol_scale = 1e-2;
};

TEST(CudaElementwise, UnaryOpsMatchTheCpuOnEveryPath) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, -10, 10, true, false},
      {"abs", [](const Tensor& x) { return abs(x); }, -10, 10, true, false},
      {"sign", [](const Tensor& x) { return sign(x); }, -10, 10, true, false},
      {"relu", [](const Tensor& x) { return relu(x); }, -10, 10, true, false},
      {"clamp",
       [](const Tensor& x) { return clamp(x, Scalar(-2), Scalar(3)); },
       -10,
       10,
       true,
       false},
      {"exp", [](const Tensor& x) { return exp(x); }, -20, 20, false, true},
      {"log", [](const Tensor& x) { return log(x); }, 1e-3, 1e3, false, true},
      {"log1p", [](const Tensor& x) { return log1p(x); }, -0.9, 10, false, true},
      {"expm1", [](const Tensor& x) { return expm1(x); }, -5, 5, false, true},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0, 100, true, true},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.01, 100, false, true},
      {"sin", [](const Tensor& x) { return sin(x); }, -6, 6, false, true},
      {"cos", [](const Tensor& x) { return cos(x); }, -6, 6, false, true},
      {"tanh", [](const Tensor& x) { return tanh(x); }, -5, 5, false, true},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -10, 10, false, true},
      {"gelu", [](const Tensor& x) { return gelu(x); }, -5, 5, false, true, 5},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, -5, 5, false, true, 5},
      {"silu", [](const Tensor& x) { return silu(x); }, -10, 10, false, true},
      {"softplus", [](const Tensor& x) { return softplus(x, 2, 5); }, -10, 10, false, true},
      {"isnan", [](const Tensor& x) { return isnan(x); }, -1, 1, true, false},
      {"isfinite", [](const Tensor& x) { return isfinite(x); }, -1, 1, true, false},
      {"logical_not", [](const Tensor& x) { return logical_not(x); }, -1, 1, true, false},
  };
  for (const UnaryCase& c : cases) {
    std::vector<double> v = random_values(40 * 51, c.lo, c.hi, 11);
    v[7] = std::nan("");  // NaN propagation must agree too
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64}) {
      if (c.floating_only && !is_floating(t)) continue;
      const Tensor base = make_input(v, {40, 51}, t);
      const Tensor gbase = base.to(kGpu);
      for (const auto& [vname, view] : views()) {
        const Tensor cpu = c.f(view(base)), gpu = c.f(view(gbase));
        const double rtol = c.exact ? 0 : ulp_rtol(cpu.dtype());
        EXPECT_TRUE(matches_cpu(gpu, cpu, rtol, rtol * c.atol_scale))
            << c.name << " " << dtype_name(t) << " " << vname;
      }
    }
  }
}

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> f;
  bool exact;
};

TEST(CudaElementwise, BinaryOpsMatchTheCpuWithBroadcastsAndViews) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, true},
      {"add alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, 3); }, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, true},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, true},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, true},
      {"floor_divide", [](const Tensor& a, const Tensor& b) { return floor_divide(a, b); }, true},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, true},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, true},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(abs(a), b); }, false},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, true},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, true},
      {"logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); }, true},
      {"where", [](const Tensor& a, const Tensor& b) { return where(gt(a, 0), a, b); }, true},
  };
  // Integer operands avoid zero (integer division by zero is rejected) and keep pow small.
  const std::vector<double> av = random_values(7 * 5 * 33, 1, 9, 21);
  const std::vector<double> bv = random_values(5 * 33, 1, 4, 22);
  for (const BinaryCase& c : cases) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kInt64, kInt32}) {
      const Tensor a = make_input(av, {7, 5, 33}, t), b = make_input(bv, {5, 33}, t);
      const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
      const double rtol = c.exact ? 0 : ulp_rtol(is_floating(t) ? t : kFloat32);
      // Same-shape, broadcast [5, 33] against [7, 5, 33], a transposed operand, a scalar.
      EXPECT_TRUE(matches_cpu(
          c.f(ga.narrow(0, 0, 1).squeeze(0), gb), c.f(a.narrow(0, 0, 1).squeeze(0), b), rtol, 0))
          << c.name << " " << dtype_name(t) << " same shape";
      EXPECT_TRUE(matches_cpu(c.f(ga, gb), c.f(a, b), rtol, 0))
          << c.name << " " << dtype_name(t) << " broadcast";
      EXPECT_TRUE(
          matches_cpu(c.f(ga.transpose(1, 2), gb.t()), c.f(a.transpose(1, 2), b.t()), rtol, 0))
          << c.name << " " << dtype_name(t) << " transposed";
      const Tensor s = full({}, 3, t);  // a 0-dim CPU operand joins a GPU op, as in PyTorch
      EXPECT_TRUE(matches_cpu(c.f(ga, s), c.f(a, s), rtol, 0))
          << c.name << " " << dtype_name(t) << " 0-dim";
    }
  }
}

TEST(CudaElementwise, InPlaceAndMixedDTypes) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(999, -3, 3, 31);
  Tensor cpu = make_input(v, {999}, kFloat32), gpu = cpu.to(kGpu);
  cpu.mul_(2).add_(1);
  gpu.mul_(2).add_(1);
  EXPECT_TRUE(equals_cpu(gpu, cpu));
  relu_(cpu);
  relu_(gpu);
  EXPECT_TRUE(equals_cpu(gpu, cpu));
  // int32 + float64 promotes to float64 on both devices.
  const Tensor i = arange(999, kInt32);
  const Tensor d = make_input(v, {999}, kFloat64);
  EXPECT_TRUE(equals_cpu(add(i.to(kGpu), d.to(kGpu)), add(i, d)));
  // Mixing devices is an error naming both.
  EXPECT_THROW(add(gpu, cpu), DeviceError);
}

// A 0-dim CPU tensor joins a CUDA operand as a scalar would, whichever side it is on and
// whether or not the CUDA operand has dims (a resumed run adds its CPU running sums to the
// step's 0-dim CUDA loss).
TEST(CudaElementwise, ZeroDimCpuTensorJoinsCudaOperands) {
  IGNIS_REQUIRE_CUDA();
  const Tensor cpu_scalar = scalar_tensor(2.5, kFloat32);
  const Tensor gpu_scalar = scalar_tensor(4.0, kFloat32).to(kGpu);
  for (const Tensor& r : {add(cpu_scalar, gpu_scalar), add(gpu_scalar, cpu_scalar)}) {
    EXPECT_TRUE(r.device().is_cuda());
    EXPECT_EQ(r.item<double>(), 6.5);
  }
  const Tensor gpu_row = full({3}, 1.0, TensorOptions(kFloat32, kGpu));
  const Tensor r = mul(cpu_scalar, gpu_row);
  EXPECT_TRUE(r.device().is_cuda());
  EXPECT_TRUE(equals_cpu(r, full({3}, 2.5, kFloat32)));
}

TEST(CudaElementwise, SixtyFourBitOffsets) {
  IGNIS_REQUIRE_CUDA();
  // A transposed view of a [2, 2^30 + 16] uint8 tensor: 2^31 + 32 elements, so the plan
  // cannot use 32-bit offsets (its output takes the view's layout: one dense run). 2 GiB in,
  // 2 GiB out.
  const int64_t n = (int64_t(1) << 30) + 16;
  Tensor base = zeros({2, n}, TensorOptions(kUInt8, kGpu));
  base.narrow(0, 1, 1).fill_(2);
  Tensor out = base.t() + 1;  // [n, 2]: rows (1, 3)
  ASSERT_EQ(out.sizes(), (Shape{n, 2}));
  EXPECT_EQ(out.sum().item<int64_t>(), 4 * n);
  EXPECT_EQ(testing::values_of(out.narrow(0, 0, 2).cpu()), (std::vector<double>{1, 3, 1, 3}));
  EXPECT_EQ(testing::values_of(out.narrow(0, n - 2, 2).cpu()), (std::vector<double>{1, 3, 1, 3}));
  // The 32-bit plan fits for the contiguous copy of one row.
  EXPECT_EQ(out.narrow(1, 1, 1).sum().item<int64_t>(), 3 * n);
  // Few elements, far apart: [2, 1025] with strides (n, 2^20) spans 2^31 + 16 elements though
  // it holds 2050, and it is not dense, so the plan keeps both dims with 64-bit offsets.
  const Tensor sparse = base.slice(1, 0, n, int64_t(1) << 20) + 1;
  ASSERT_EQ(sparse.sizes(), (Shape{2, 1025}));
  std::vector<double> expected(2 * 1025, 1.0);
  std::fill(expected.begin() + 1025, expected.end(), 3.0);
  EXPECT_EQ(testing::values_of(sparse.cpu()), expected);
}

}  // namespace
}  // namespace ignis
