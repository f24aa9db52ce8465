// Layer norm and group norm on the GPU (src/cuda/row_norm.cu) against the CPU: outputs and the
// input, weight and bias gradients, with and without the affine parameters, float32 and
// float64, bf16 and fp16 inputs (computed in float32 by both), channels-last group norm, rows
// shorter than a warp and longer than a block, and enough rows to split the weight gradient's
// sums into many chunks, and more rows than the row kernels have blocks.
#include <fmt/format.h>

#include <functional>

#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
using testing::kGpu;
using testing::matches_cpu;
using testing::random_tensor;

/// The forward output and the gradients (input, weight, bias) of sum(norm(x) * r) on device d;
/// `norm` gets x, weight and bias there (weight/bias undefined when !affine).
using Norm = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
std::vector<Tensor> run(
    const Norm& norm,
    const Tensor& x0,
    const Tensor& w0,
    const Tensor& b0,
    bool affine,
    Device d,
    bool channels_last = false) {
  Tensor x = x0.to(d);
  if (channels_last) x = x.contiguous(MemoryFormat::channels_last);
  x = x.detach().requires_grad_();
  Tensor w = affine ? w0.to(d).requires_grad_() : Tensor();
  Tensor b = affine ? b0.to(d).requires_grad_() : Tensor();
  const Tensor y = norm(x, w, b);
  const Tensor r = random_tensor(x0.sizes(), -1, 1, 77).to(d, y.dtype());
  (y * r).sum().backward();
  return {y.detach(), x.grad(), affine ? w.grad() : Tensor(), affine ? b.grad() : Tensor()};
}

void expect_same(
    const std::vector<Tensor>& gpu,
    const std::vector<Tensor>& cpu,
    DType t,
    const std::string& what) {
  // Double accumulation on both; float32 results differ by the roundings of other sum orders.
  const double tol = t == kFloat64 ? 1e-10 : t == kFloat32 ? 2e-5 : 2e-2;
  const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
  for (size_t i = 0; i < gpu.size(); ++i)
    if (cpu[i].defined())
      EXPECT_TRUE(matches_cpu(gpu[i], cpu[i], tol, tol)) << what << " " << names[i];
}

TEST(CudaNorm, LayerNormMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  struct Case {
    Shape x, normalized;
  };
  // Rows of 5 (less than a warp), 768 and 3000 (more than one block's threads), 20,000 rows,
  // and 2^20 + 3 rows (more than the row kernels' 2^20 blocks: three blocks take two rows).
  const Case cases[] = {
      {{4, 3, 5}, {5}},
      {{16, 768}, {768}},
      {{2, 3, 1000}, {3, 1000}},
      {{20000, 8}, {8}},
      {{(1 << 20) + 3, 2}, {2}}};
  uint64_t seed = 1;
  for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16})
    for (const Case& c : cases)
      for (bool affine : {true, false}) {
        const Tensor x = (random_tensor(c.x, -2, 2, seed++) + 0.5).to(t);
        const Tensor w = random_tensor(c.normalized, 0.5, 1.5, seed++).to(t);
        const Tensor b = random_tensor(c.normalized, -1, 1, seed++).to(t);
        const Norm norm = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
          return layer_norm(xx, c.normalized, ww, bb, 1e-5);
        };
        expect_same(
            run(norm, x, w, b, affine, kGpu),
            run(norm, x, w, b, affine, Device::cpu()),
            t,
            fmt::format(
                "layer_norm {} {} affine {}", dtype_name(t), detail::shape_str(c.x), affine));
      }
}

TEST(CudaNorm, GroupNormMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  struct Case {
    Shape x;
    int64_t groups;
  };
  const Case cases[] = {{{2, 6, 4, 5}, 3}, {{3, 32, 8, 8}, 8}, {{1, 4, 1, 1}, 2}, {{64, 4, 3}, 1}};
  uint64_t seed = 100;
  for (DType t : {kFloat32, kFloat64, kBFloat16})
    for (const Case& c : cases)
      for (bool affine : {true, false})
        for (bool cl : {false, true}) {
          if (cl && c.x.size() != 4) continue;
          const Tensor x = random_tensor(c.x, -2, 2, seed++).to(t);
          const Tensor w = random_tensor({c.x[1]}, 0.5, 1.5, seed++).to(t);
          const Tensor b = random_tensor({c.x[1]}, -1, 1, seed++).to(t);
          const Norm norm = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
            return group_norm(xx, c.groups, ww, bb, 1e-5);
          };
          expect_same(
              run(norm, x, w, b, affine, kGpu, cl),
              run(norm, x, w, b, affine, Device::cpu(), cl),
              t,
              fmt::format(
                  "group_norm {} {} groups {} affine {} channels-last {}",
                  dtype_name(t),
                  detail::shape_str(c.x),
                  c.groups,
                  affine,
                  cl));
        }
}

}  // namespace
}  // namespace ignis
