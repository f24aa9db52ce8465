// Matrix products through cuBLASLt and softmax on the GPU against the CPU. Products are
// compared with the CPU's float64 result of the same inputs: with TF32 off (the default) a
// float32 product is within float32 rounding of it (error ~ sqrt(k) ulp); with TF32 on it is
// not (10-bit mantissas), which the switch test shows.
#include <functional>

#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
using testing::kGpu;
using testing::make_input;
using testing::matches_cpu;
using testing::random_values;

Tensor rand_input(const Shape& shape, DType t, uint64_t seed) {
  return make_input(random_values(detail::shape_numel(shape), -1, 1, seed), shape, t);
}

/// gpu (any floating dtype) against the float64 CPU product of the same inputs, rounded.
::testing::AssertionResult product_matches(
    const Tensor& gpu, const Tensor& cpu64, double rtol, double atol) {
  return matches_cpu(gpu, cpu64.to(gpu.dtype()), rtol, atol);
}

TEST(CudaLinalg, MatmulLayoutsAndBatches) {
  IGNIS_REQUIRE_CUDA();
  const Tensor a = rand_input({64, 96}, kFloat64, 1), b = rand_input({96, 80}, kFloat64, 2);
  const Tensor ab = matmul(a, b);
  for (DType t : {kFloat32, kFloat64}) {
    const double tol = t == kFloat32 ? 2e-5 : 1e-12;
    const Tensor ga = a.to(kGpu, t), gb = b.to(kGpu, t);
    EXPECT_TRUE(product_matches(matmul(ga, gb), ab, tol, tol)) << dtype_name(t);
    // Transposed operands (column-major, op T) give the same product.
    const Tensor gat = a.t().contiguous().to(kGpu, t).t(), gbt = b.t().contiguous().to(kGpu, t).t();
    EXPECT_TRUE(product_matches(matmul(gat, gbt), ab, tol, tol)) << dtype_name(t);
    // One operand as stored (op N), the other transposed (op T), both ways round.
    EXPECT_TRUE(product_matches(matmul(ga, gbt), ab, tol, tol)) << dtype_name(t);
    EXPECT_TRUE(product_matches(matmul(gat, gb), ab, tol, tol)) << dtype_name(t);
    // A strided slice (neither stride 1): packed before the call.
    const Tensor wide = rand_input({96, 160}, kFloat64, 3);
    EXPECT_TRUE(product_matches(
        matmul(ga, wide.to(kGpu, t).slice(1, 0, 160, 2)),
        matmul(a, wide.slice(1, 0, 160, 2)),
        tol,
        tol))
        << dtype_name(t);
    // Vector products.
    const Tensor v = rand_input({96}, kFloat64, 4);
    EXPECT_TRUE(product_matches(matmul(ga, v.to(kGpu, t)), matmul(a, v), tol, tol));
    EXPECT_TRUE(product_matches(matmul(v.to(kGpu, t), gb), matmul(v, b), tol, tol));
  }
  // Batches: bmm, a broadcast (stride-0) operand, and two batch dims.
  const Tensor x = rand_input({6, 33, 17}, kFloat64, 5), y = rand_input({6, 17, 29}, kFloat64, 6);
  EXPECT_TRUE(
      product_matches(bmm(x.to(kGpu, kFloat32), y.to(kGpu, kFloat32)), bmm(x, y), 2e-5, 2e-5));
  const Tensor shared = rand_input({17, 29}, kFloat64, 7);
  EXPECT_TRUE(
      product_matches(matmul(x.to(kGpu), shared.to(kGpu)), matmul(x, shared), 1e-12, 1e-12));
  const Tensor x4 = rand_input({2, 3, 8, 5}, kFloat64, 8), y4 = rand_input({3, 5, 7}, kFloat64, 9);
  EXPECT_TRUE(product_matches(matmul(x4.to(kGpu), y4.to(kGpu)), matmul(x4, y4), 1e-12, 1e-12));
  const Tensor xb = rand_input({1, 9, 5}, kFloat64, 10), yb = rand_input({4, 5, 6}, kFloat64, 11);
  EXPECT_TRUE(product_matches(matmul(xb.to(kGpu), yb.to(kGpu)), matmul(xb, yb), 1e-12, 1e-12));
}

TEST(CudaLinalg, AddmmAndSixteenBitTypes) {
  IGNIS_REQUIRE_CUDA();
  const Tensor c = rand_input({32, 48}, kFloat64, 12), a = rand_input({32, 64}, kFloat64, 13),
               b = rand_input({64, 48}, kFloat64, 14);
  const Tensor expected = addmm(c, a, b, 0.5, 2.0);
  EXPECT_TRUE(
      product_matches(addmm(c.to(kGpu), a.to(kGpu), b.to(kGpu), 0.5, 2.0), expected, 1e-12, 1e-12));
  EXPECT_TRUE(product_matches(
      addmm(c.to(kGpu, kFloat32), a.to(kGpu, kFloat32), b.to(kGpu, kFloat32), 0.5, 2.0),
      expected,
      2e-5,
      2e-5));
  // 16-bit inputs accumulate in float32 and round once: the float64 product of the rounded
  // inputs, rounded to the dtype (one ulp of it, plus float32 accumulation).
  for (DType t : {kFloat16, kBFloat16}) {
    const Tensor a16 = a.to(t), b16 = b.to(t);
    const Tensor ref = matmul(a16.to(kFloat64), b16.to(kFloat64));
    const double tol = t == kFloat16 ? 2e-3 : 1.6e-2;
    EXPECT_TRUE(product_matches(matmul(a16.to(kGpu), b16.to(kGpu)), ref, tol, tol))
        << dtype_name(t);
  }
  EXPECT_THROW(
      matmul(ones({2, 2}, TensorOptions(kInt64, kGpu)), ones({2, 2}, TensorOptions(kInt64, kGpu))),
      NotImplementedError);
}

TEST(CudaLinalg, Tf32IsOffByDefaultAndSwitchable) {
  IGNIS_REQUIRE_CUDA();
  EXPECT_FALSE(cuda::allow_tf32());
  const Tensor a = rand_input({256, 512}, kFloat64, 15), b = rand_input({512, 256}, kFloat64, 16);
  const Tensor ref = matmul(a, b);
  const Tensor ga = a.to(kGpu, kFloat32), gb = b.to(kGpu, kFloat32);
  const double full = (matmul(ga, gb).cpu().to(kFloat64) - ref).abs().max().item<double>();
  double tf32 = 0;
  {
    const testing::ScopedSwitch tf32_on(cuda::set_allow_tf32);
    tf32 = (matmul(ga, gb).cpu().to(kFloat64) - ref).abs().max().item<double>();
  }
  EXPECT_LT(full, 1e-4);  // float32 arithmetic: ~sqrt(512) * 2^-24 * |terms|
  EXPECT_LT(tf32, 0.1);   // 10-bit mantissas: ~2^-11 relative per term
  EXPECT_GT(tf32, 10 * full) << "TF32 on should be visibly less exact than float32";
}

TEST(CudaLinalg, SoftmaxAndLogSoftmax) {
  IGNIS_REQUIRE_CUDA();
  struct Case {
    Shape shape;
    int64_t dim;
  };
  // Short rows (a warp each), long rows (a block each), and a non-last dim (column kernel).
  const Case cases[] = {{{300, 10}, 1}, {{7, 5000}, -1}, {{20, 30, 11}, 1}, {{40, 3}, 0}};
  for (const Case& c : cases) {
    const Tensor x =
        make_input(random_values(detail::shape_numel(c.shape), -8, 8, 17), c.shape, kFloat64);
    for (DType t : {kFloat32, kFloat64, kFloat16}) {
      // The reference sees the same (rounded) inputs as the GPU.
      const Tensor xt = x.to(t).to(kFloat64);
      const Tensor ref = softmax(xt, c.dim), lref = log_softmax(xt, c.dim);
      const double tol = t == kFloat64 ? 1e-13 : t == kFloat32 ? 4e-6 : 2e-3;
      const Tensor gx = x.to(kGpu, t);
      EXPECT_TRUE(product_matches(softmax(gx, c.dim), ref, tol, tol * 1e-2)) << dtype_name(t);
      EXPECT_TRUE(product_matches(log_softmax(gx, c.dim), lref, tol, tol)) << dtype_name(t);
    }
  }
}

}  // namespace
}  // namespace ignis
