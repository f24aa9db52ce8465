// Random numbers on the GPU are the CPU's, bit for bit: same seed and shape, same values
// (Note [Bit-identical random streams]), for every distribution and dtype and for views.
// And autograd runs on the GPU through the same formulas: gradients of a small network
// match the CPU's.
#include "cuda/cuda_test_util.h"
#include "ignis/nn/functional.h"

namespace ignis {
namespace {
using testing::equals_cpu;
using testing::kGpu;
using testing::matches_cpu;

TEST(CudaRandom, SameSeedSameValuesAsTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const Shape shape{37, 1001};  // odd sizes: a partial last Philox block
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    Generator gc(1234), gg(1234);
    EXPECT_TRUE(equals_cpu(rand(shape, TensorOptions(t, kGpu), &gg), rand(shape, t, &gc)))
        << "rand " << dtype_name(t);
    EXPECT_TRUE(equals_cpu(randn(shape, TensorOptions(t, kGpu), &gg), randn(shape, t, &gc)))
        << "randn " << dtype_name(t);
    Tensor uc = empty(shape, t), ug = empty(shape, TensorOptions(t, kGpu));
    uc.uniform_(-3, 5, &gc);
    ug.uniform_(-3, 5, &gg);
    EXPECT_TRUE(equals_cpu(ug, uc)) << "uniform_ " << dtype_name(t);
    Tensor nc = empty(shape, t), ng = empty(shape, TensorOptions(t, kGpu));
    nc.normal_(2, 0.5, &gc);
    ng.normal_(2, 0.5, &gg);
    EXPECT_TRUE(equals_cpu(ng, nc)) << "normal_ " << dtype_name(t);
    EXPECT_EQ(gg.offset(), gc.offset());  // both reserved the same Philox blocks
  }
  for (DType t : {kInt64, kInt32, kUInt8, kFloat32}) {
    Generator gc(99), gg(99);
    EXPECT_TRUE(equals_cpu(
        randint(0, 200, shape, TensorOptions(t, kGpu), &gg), randint(0, 200, shape, t, &gc)))
        << "randint " << dtype_name(t);
  }
  for (DType t : {kBool, kFloat32, kInt64}) {
    Generator gc(7), gg(7);
    Tensor bc = empty(shape, t), bg = empty(shape, TensorOptions(t, kGpu));
    bc.bernoulli_(0.3, &gc);
    bg.bernoulli_(0.3, &gg);
    EXPECT_TRUE(equals_cpu(bg, bc)) << "bernoulli_ " << dtype_name(t);
  }
  Generator gc(5), gg(5);
  const Tensor p = rand(shape, kFloat32, &gc);
  gg.set_offset(gc.offset());
  EXPECT_TRUE(equals_cpu(bernoulli(p.to(kGpu), &gg), bernoulli(p, &gc)));
}

TEST(CudaRandom, ViewsDrawInLogicalOrder) {
  IGNIS_REQUIRE_CUDA();
  Generator gc(42), gg(42);
  Tensor c = zeros({64, 48}, kFloat32), g = zeros({64, 48}, TensorOptions(kFloat32, kGpu));
  c.t().normal_(0, 1, &gc);
  g.t().normal_(0, 1, &gg);
  EXPECT_TRUE(equals_cpu(g, c));
  c.slice(1, 0, 48, 3).uniform_(0, 1, &gc);
  g.slice(1, 0, 48, 3).uniform_(0, 1, &gg);
  EXPECT_TRUE(equals_cpu(g, c));
}

TEST(CudaRandom, RandpermIsTheCpusPermutation) {
  IGNIS_REQUIRE_CUDA();
  // 1: a single key; odd sizes: a partial last Philox block; 3 M: CUB's multi-pass sort.
  for (int64_t n : {int64_t(1), int64_t(2), int64_t(1001), int64_t(3000001)})
    for (DType t : {kInt64, kInt32, kFloat32}) {
      Generator gc(2024), gg(2024);
      const Tensor cpu = randperm(n, t, &gc);
      const Tensor gpu = randperm(n, TensorOptions(t, kGpu), &gg);
      EXPECT_TRUE(equals_cpu(gpu, cpu)) << "randperm " << n << " " << dtype_name(t);
      EXPECT_EQ(gg.offset(), gc.offset()) << "randperm " << n;
      // Both devices continue the stream in step: the next draw agrees too.
      EXPECT_TRUE(equals_cpu(rand({5}, TensorOptions(kFloat32, kGpu), &gg), rand({5}, kFloat32, &gc)));
    }
  EXPECT_EQ(randperm(0, TensorOptions(kInt64, kGpu)).numel(), 0);
}

TEST(CudaAutograd, GradientsOfASmallNetworkMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  // Two layers, relu, a softmax classifier term and an MSE term, in float64 so the
  // comparison is tight; backward formulas are ignis ops, so they run on the GPU unchanged.
  Generator g(3);
  const Tensor x = randn({16, 20}, kFloat64, &g), y = randn({16, 5}, kFloat64, &g);
  const Tensor w1 = randn({32, 20}, kFloat64, &g) * 0.2, b1 = randn({32}, kFloat64, &g) * 0.1;
  const Tensor w2 = randn({5, 32}, kFloat64, &g) * 0.2, b2 = zeros({5}, kFloat64);
  const Tensor onehot = (randint(0, 5, {16, 1}, kInt64, &g) == arange(5, kInt64)).to(kFloat64);
  const auto grads = [&](Device d) {
    // Fresh leaves on each device (copy = true: on the CPU, to() would return w1 itself).
    std::vector<Tensor> params;
    for (const Tensor& w : {w1, b1, w2, b2})
      params.push_back(w.to(d, kFloat64, false, /*copy=*/true).requires_grad_());
    const Tensor h = relu(nn::functional::linear(x.to(d), params[0], params[1]));
    const Tensor out = nn::functional::linear(h, params[2], params[3]);
    const Tensor loss = nn::functional::mse_loss(out, y.to(d)) -
                        (log_softmax(out, 1) * onehot.to(d)).sum({1}).mean() +
                        sigmoid(out).pow(2).mean();
    loss.backward();
    std::vector<Tensor> gs;
    for (const Tensor& p : params) gs.push_back(p.grad());
    gs.push_back(loss.detach());
    return gs;
  };
  const std::vector<Tensor> cpu = grads(Device::cpu()), gpu = grads(kGpu);
  for (size_t i = 0; i < cpu.size(); ++i)
    EXPECT_TRUE(matches_cpu(gpu[i], cpu[i], 1e-10, 1e-12)) << "gradient " << i;
}

}  // namespace
}  // namespace ignis
