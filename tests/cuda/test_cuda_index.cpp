// CUDA indexing (src/cuda/index.cu) and sorting / scans (src/cuda/sort.cu) against the CPU.
// Gather and scatter visit each destination's updates in the CPU's order and cumsum
// accumulates as the CPU does, so every result here must equal the CPU's exactly, including
// scatter_add / index_add sums with repeated indices, sort's tie order and NaN placement.
#include <fmt/format.h>

#include <cmath>

#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
using testing::equals_cpu;
using testing::kGpu;
using testing::make_input;
using testing::matches_cpu;
using testing::random_values;

/// Random int64 (or int32) indices in [0, hi) of `shape`, on the CPU.
Tensor random_index(const Shape& shape, int64_t hi, uint64_t seed, DType t = kInt64) {
  std::vector<double> v = random_values(detail::shape_numel(shape), 0, double(hi), seed);
  for (double& x : v) x = std::min(std::floor(x), double(hi - 1));
  return make_input(v, shape, t);
}

const DType kValueTypes[] = {
    kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kUInt8, kBool};

TEST(CudaIndex, IndexSelectAndGatherMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const Shape shape{40, 33};
  const std::vector<double> v = random_values(40 * 33, -50, 50, 71);
  for (DType t : kValueTypes) {
    for (testing::Layout layout : testing::kAllLayouts) {
      const Tensor cpu = make_input(v, shape, t, layout), gpu = cpu.to(kGpu);
      for (int64_t dim : {0, 1}) {
        for (DType it : {kInt64, kInt32}) {
          const Tensor idx = random_index({57}, shape[size_t(dim)], 72 + uint64_t(dim), it);
          EXPECT_TRUE(equals_cpu(index_select(gpu, dim, idx.to(kGpu)), index_select(cpu, dim, idx)))
              << dtype_name(t) << " " << testing::layout_name(layout) << " dim " << dim;
        }
        // gather with an index smaller than x in the other dim and longer along dim.
        const Shape ishape = dim == 0 ? Shape{61, 20} : Shape{25, 70};
        const Tensor gidx = random_index(ishape, shape[size_t(dim)], 73 + uint64_t(dim));
        EXPECT_TRUE(equals_cpu(gather(gpu, dim, gidx.to(kGpu)), gather(cpu, dim, gidx)))
            << dtype_name(t) << " " << testing::layout_name(layout) << " dim " << dim;
      }
    }
  }
  // Large: 2^22 elements gathered through an expanded (stride 0) index.
  const Tensor big = make_input(random_values(1 << 22, -1, 1, 74), {1 << 11, 1 << 11}, kFloat32);
  const Tensor rows = random_index({3000}, 1 << 11, 75);
  EXPECT_TRUE(equals_cpu(index_select(big.to(kGpu), 0, rows.to(kGpu)), index_select(big, 0, rows)));
}

TEST(CudaIndex, ScatterAndIndexAddMatchTheCpuWithRepeatedIndices) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(30 * 24, -4, 4, 81);
  const std::vector<double> s = random_values(45 * 24, -4, 4, 82);
  for (DType t : {kFloat32, kFloat64, kBFloat16, kInt64, kInt32, kBool}) {
    const Tensor x = make_input(v, {30, 24}, t), src = make_input(s, {45, 24}, t);
    const Tensor xg = x.to(kGpu), srcg = src.to(kGpu);
    // 45 updates into 30 rows: many destinations receive several (the last write must win,
    // sums must be added in index order).
    const Tensor idx = random_index({45, 24}, 30, 83);
    const Tensor ig = idx.to(kGpu);
    EXPECT_TRUE(equals_cpu(scatter(xg, 0, ig, srcg), scatter(x, 0, idx, src))) << dtype_name(t);
    EXPECT_TRUE(equals_cpu(scatter(xg, 0, ig, Scalar(3)), scatter(x, 0, idx, Scalar(3))))
        << dtype_name(t);
    EXPECT_TRUE(equals_cpu(scatter_add(xg, 0, ig, srcg), scatter_add(x, 0, idx, src)))
        << dtype_name(t);
    // Along dim 1 with a transposed source.
    const Tensor idx1 = random_index({24, 30}, 24, 84);
    const Tensor src1 = make_input(s, {24, 45}, t, testing::Layout::Transposed).narrow(1, 0, 30);
    const Tensor x1 = make_input(v, {24, 30}, t);
    EXPECT_TRUE(equals_cpu(
        scatter_add(x1.to(kGpu), 1, idx1.to(kGpu), src1.to(kGpu)), scatter_add(x1, 1, idx1, src1)))
        << dtype_name(t);
    const Tensor rows = random_index({45}, 30, 85);
    for (double alpha : {1.0, 2.5}) {
      if (t == kBool || (!is_floating(t) && alpha != 1.0)) continue;
      const Scalar a = alpha == 1.0 ? Scalar(1) : Scalar(alpha);
      EXPECT_TRUE(
          equals_cpu(index_add(xg, 0, rows.to(kGpu), srcg, a), index_add(x, 0, rows, src, a)))
          << dtype_name(t) << " alpha " << alpha;
    }
  }
  const Tensor labels = random_index({500}, 10, 86);
  EXPECT_TRUE(equals_cpu(one_hot(labels.to(kGpu), 10), one_hot(labels, 10)));
}

TEST(CudaIndex, OutOfBoundsIndexIsAnIndexErrorNotACrash) {
  IGNIS_REQUIRE_CUDA();
  const Tensor x = zeros({8, 5}, TensorOptions(kFloat32, kGpu));
  for (int64_t bad : {8, -1, 1000}) {
    const Tensor idx =
        tensor(std::vector<int64_t>{0, 3, bad, 7, bad + 1}, std::nullopt, {kInt64, kGpu});
    // The message names the first bad value, as on the CPU.
    EXPECT_THROW_MSG(
        index_select(x, 0, idx),
        IndexError,
        fmt::format("index {} is out of bounds for dimension 0 with size 8", bad));
    Tensor y = x.clone();
    EXPECT_THROW_MSG(
        index_add_(y, 0, idx, ones({5, 5}, TensorOptions(kFloat32, kGpu))),
        IndexError,
        fmt::format("index {} is out of bounds", bad));
    EXPECT_THROW_MSG(
        gather(x, 0, idx.view({5, 1})), IndexError, fmt::format("index {} is out of bounds", bad));
  }
  // The device is still usable and nothing was written.
  EXPECT_EQ(sum(x).item<double>(), 0.0);
}

TEST(CudaIndex, MaskedSelectFillTrilTriuCatStackMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(6 * 70 * 9, -1, 1, 91);
  for (DType t : {kFloat32, kFloat16, kInt64, kUInt8}) {
    for (testing::Layout layout : {testing::Layout::Contiguous, testing::Layout::Transposed}) {
      const Tensor x = make_input(v, {6, 70, 9}, t, layout), xg = x.to(kGpu);
      const Tensor mask = gt(make_input(v, {6, 70, 9}, kFloat32), 0.3);
      const std::vector<double> row(v.begin(), v.begin() + 70);
      const Tensor row_mask = gt(make_input(row, {1, 70, 1}, kFloat32), 0.0);  // broadcast
      EXPECT_TRUE(equals_cpu(masked_select(xg, mask.to(kGpu)), masked_select(x, mask)));
      EXPECT_TRUE(equals_cpu(masked_select(xg, row_mask.to(kGpu)), masked_select(x, row_mask)));
      EXPECT_TRUE(equals_cpu(masked_fill(xg, mask.to(kGpu), 2), masked_fill(x, mask, 2)));
      for (int64_t diag : {-3, 0, 2}) {
        EXPECT_TRUE(equals_cpu(tril(xg, diag), tril(x, diag))) << diag;
        EXPECT_TRUE(equals_cpu(triu(xg, diag), triu(x, diag))) << diag;
      }
      EXPECT_TRUE(equals_cpu(cat({xg, xg.narrow(1, 5, 7)}, 1), cat({x, x.narrow(1, 5, 7)}, 1)));
      EXPECT_TRUE(equals_cpu(stack({xg, xg}, 2), stack({x, x}, 2)));
    }
  }
  const Tensor none = zeros({4, 4}, TensorOptions(kBool, kGpu));
  EXPECT_EQ(masked_select(ones({4, 4}, TensorOptions(kFloat32, kGpu)), none).numel(), 0);
}

TEST(CudaIndex, EmbeddingForwardAndBackwardMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  // An embedding is index_select of the weight's rows; its gradient is index_add of the
  // output gradient's rows, with repeated tokens summing into one row.
  const Tensor w = make_input(random_values(100 * 16, -1, 1, 95), {100, 16}, kFloat32);
  const Tensor tokens = random_index({8 * 12}, 100, 96);
  const Tensor upstream = make_input(random_values(96 * 16, -1, 1, 97), {96, 16}, kFloat32);
  Tensor grads[2];
  Tensor outs[2];
  for (int k = 0; k < 2; ++k) {
    const Device d = k == 0 ? Device::cpu() : kGpu;
    Tensor wd = w.to(d, kFloat32, false, /*copy=*/true).requires_grad_();
    outs[k] = index_select(wd, 0, tokens.to(d));
    sum(outs[k] * upstream.to(d)).backward();
    grads[k] = wd.grad();
  }
  EXPECT_TRUE(equals_cpu(outs[1].detach(), outs[0].detach()));
  EXPECT_TRUE(equals_cpu(grads[1], grads[0]));
}

TEST(CudaSort, SortArgsortTopkMatchTheCpuWithTiesAndNaN) {
  IGNIS_REQUIRE_CUDA();
  // Few distinct values (many ties); for the floating types also NaNs, infinities and both
  // zeros. Integers get the same values shifted to [0, 12], which every dtype holds.
  std::vector<double> ints = random_values(37 * 300, -6, 6, 101), v(ints.size());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::floor(ints[i]);
    ints[i] = v[i] + 6;
    if (i % 29 == 3) v[i] = NAN;
    if (i % 31 == 5) v[i] = -0.0;
    if (i % 37 == 7) v[i] = INFINITY;
    if (i % 41 == 9) v[i] = -INFINITY;
  }
  for (DType t : kValueTypes) {
    const Tensor x =
        make_input(is_floating(t) ? v : ints, {37, 300}, t, testing::Layout::Transposed);
    const Tensor xg = x.to(kGpu);
    for (int64_t dim : {0, 1}) {
      for (bool desc : {false, true}) {
        const auto [cv, ci] = sort(x, dim, desc, /*stable=*/true);
        const auto [gv, gi] = sort(xg, dim, desc, /*stable=*/true);
        EXPECT_TRUE(equals_cpu(gv, cv)) << dtype_name(t) << " dim " << dim << " desc " << desc;
        EXPECT_TRUE(equals_cpu(gi, ci)) << dtype_name(t) << " dim " << dim << " desc " << desc;
        EXPECT_TRUE(equals_cpu(argsort(xg, dim, desc), argsort(x, dim, desc))) << dtype_name(t);
      }
      for (bool largest : {true, false}) {
        const auto [cv, ci] = topk(x, 5, dim, largest);
        const auto [gv, gi] = topk(xg, 5, dim, largest);
        EXPECT_TRUE(equals_cpu(gv, cv)) << dtype_name(t) << " dim " << dim << " " << largest;
        EXPECT_TRUE(equals_cpu(gi, ci)) << dtype_name(t) << " dim " << dim << " " << largest;
      }
    }
  }
  // One long row (2^20 distinct values) and many short rows.
  const Tensor big = make_input(random_values(1 << 20, -1, 1, 102), {1 << 20}, kFloat32);
  EXPECT_TRUE(equals_cpu(std::get<1>(sort(big.to(kGpu))), std::get<1>(sort(big))));
  const Tensor many = make_input(random_values(1 << 20, -1, 1, 103), {1 << 16, 16}, kFloat64);
  EXPECT_TRUE(
      equals_cpu(std::get<0>(sort(many.to(kGpu), 1, true)), std::get<0>(sort(many, 1, true))));
}

TEST(CudaSort, CumsumMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const std::vector<double> v = random_values(3 * 1000 * 5, -100, 100, 111);
  for (DType t : {kFloat32, kFloat64, kBFloat16, kInt64, kInt32, kUInt8, kBool}) {
    for (testing::Layout layout : {testing::Layout::Contiguous, testing::Layout::Strided}) {
      const Tensor x = make_input(v, {3, 1000, 5}, t, layout), xg = x.to(kGpu);
      for (int64_t dim : {0, 1, 2})
        EXPECT_TRUE(equals_cpu(cumsum(xg, dim), cumsum(x, dim)))
            << dtype_name(t) << " " << testing::layout_name(layout) << " dim " << dim;
    }
  }
  // cumsum's backward (a reversed cumsum) on the GPU.
  Tensor grads[2];
  for (int k = 0; k < 2; ++k) {
    const Device d = k == 0 ? Device::cpu() : kGpu;
    Tensor x = make_input(v, {3, 1000, 5}, kFloat64).to(d, kFloat64, false, true).requires_grad_();
    sum(cumsum(x, 1) * cumsum(x, 1)).backward();
    grads[k] = x.grad();
  }
  EXPECT_TRUE(matches_cpu(grads[1], grads[0], 1e-12, 1e-9));
}

}  // namespace
}  // namespace ignis
