// Factories: values against direct formulas, dtype defaults as PyTorch's, from_blob
// ownership, and argument errors.
#include <cmath>

#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

TEST(Factory, FilledTensors) {
  EXPECT_EQ(zeros({2, 3}).dtype(), kFloat32);
  EXPECT_EQ(values_of(zeros({2, 2}, kInt32)), std::vector<double>(4, 0));
  EXPECT_EQ(values_of(ones({3}, kBFloat16)), std::vector<double>(3, 1));
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);
  EXPECT_EQ(full({2}, 7.5).dtype(), kFloat32);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(values_of(full({2, 2}, -1.25, kFloat64)), std::vector<double>(4, -1.25));
  EXPECT_EQ(empty({0, 5}).numel(), 0);
  EXPECT_THROW_MSG(zeros({2, -1}), ValueError, "[empty] negative size in shape [2, -1]");
  Tensor base = zeros({2, 3}, kInt32);
  EXPECT_EQ(ones_like(base).dtype(), kInt32);
  EXPECT_EQ(full_like(base, 3, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(values_of(full_like(base, 3)), std::vector<double>(6, 3));
  EXPECT_EQ(zeros_like(base).sizes(), (Shape{2, 3}));
  EXPECT_EQ(scalar_tensor(2.5).dim(), 0);
  EXPECT_EQ(scalar_tensor(2.5).item<double>(), 2.5);
}

TEST(Factory, ArangeLikePython) {
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(values_of(arange(5)), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values_of(arange(1, 10, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values_of(arange(10, 1, -3)), (std::vector<double>{10, 7, 4}));
  Tensor f = arange(0.0, 1.0, 0.1);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.numel(), 10);  // ceil((1 - 0) / 0.1)
  auto fv = values_of(f);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(fv[size_t(i)], double(float(0.1 * i)));
  // start + i * step with the product rounded before the sum, whatever the build's CPU (an
  // FMA would differ in the last bit for 14 of these 100, and from the CUDA kernel).
  const auto d = values_of(arange(1.0, 11.0, 0.1, kFloat64));
  ASSERT_EQ(d.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    volatile double product = double(i) * 0.1;  // volatile: not fused with the sum
    EXPECT_EQ(d[size_t(i)], 1.0 + product) << i;
  }
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_THROW_MSG(arange(0, 5, 0), ValueError, "[arange] step must be nonzero");
  EXPECT_THROW_MSG(arange(5, 0, 1), ValueError, "[arange] upper bound 0 and lower bound 5");
}

TEST(Factory, LinspaceHitsBothEnds) {
  auto v = values_of(linspace(-1, 2, 7, kFloat64));
  ASSERT_EQ(v.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(v[size_t(i)], -1 + 0.5 * i, 1e-15);
  EXPECT_EQ(v.front(), -1.0);
  EXPECT_EQ(v.back(), 2.0);
  // The first half counts up from start, the second down from end, each product rounded.
  const int64_t n = 101;
  const double step = (1.0 - -1.3) / double(n - 1);
  const auto u = values_of(linspace(-1.3, 1.0, n, kFloat64));
  for (int64_t i = 0; i < n; ++i) {
    volatile double product = step * double(i < n / 2 ? i : n - i - 1);
    EXPECT_EQ(u[size_t(i)], i < n / 2 ? -1.3 + product : 1.0 - product) << i;
  }
  auto w = values_of(linspace(0, 1, 1));
  EXPECT_EQ(w, (std::vector<double>{0}));
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_THROW_MSG(linspace(0, 1, -2), ValueError, "[linspace] number of steps must be non-negative");
}

TEST(Factory, Eye) {
  auto v = values_of(eye(3, 4));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(v[size_t(i * 4 + j)], i == j ? 1.0 : 0.0);
  EXPECT_EQ(eye(2, std::nullopt, kInt64).dtype(), kInt64);
  EXPECT_EQ(eye(0).numel(), 0);
}

TEST(Factory, TensorFromValues) {
  Tensor t = tensor<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(t.sizes(), (Shape{2, 3}));
  EXPECT_EQ(t[1][0].item<float>(), 4.0f);
  EXPECT_EQ(tensor<int32_t>({1, 2}).dtype(), kInt32);
  EXPECT_EQ(tensor<double>({1, 2}, std::nullopt, kFloat16).dtype(), kFloat16);
  EXPECT_EQ(tensor<bool>({true, false, true}).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_THROW_MSG(tensor<float>({1, 2, 3}, Shape{2, 2}), ShapeError, "[tensor] 3 values do not fill shape [2, 2]");
}

namespace {
int g_deleted = 0;
void count_delete(void*) { ++g_deleted; }
}  // namespace

TEST(Factory, FromBlobViewsUserMemory) {
  std::vector<float> buf{1, 2, 3, 4, 5, 6};
  {
    Tensor t = from_blob(buf.data(), {2, 3}, kFloat32, std::nullopt, &count_delete);
    Tensor col = from_blob(buf.data(), {3}, kFloat32, Shape{2});  // strided view, not owned
    EXPECT_EQ(values_of(col), (std::vector<double>{1, 3, 5}));
    t.mul_(Scalar(2));  // writes through to the user's buffer
    EXPECT_EQ(buf[5], 12.0f);
  }
  EXPECT_EQ(g_deleted, 1);
  EXPECT_THROW_MSG(from_blob(nullptr, {2}, kFloat32), ValueError, "[from_blob] null data pointer");
}

// A zero size makes a tensor empty, but the other sizes still multiply into its strides:
// [0, 2^40, 2^40] has an outer stride of 2^80, which int64 cannot hold (signed overflow in
// the stride and element count computations before this check).
TEST(Factory, ShapesWhoseStridesOverflowAreRefused) {
  const int64_t big = int64_t(1) << 40;
  EXPECT_THROW_MSG(empty({0, big, big}), ValueError,
                   "[empty] shape [0, 1099511627776, 1099511627776] has too many elements");
  EXPECT_THROW_MSG(zeros({big, big, 0}), ValueError, "overflows int64");
  // Just inside the limit the shape is fine (and empty, so nothing is allocated).
  EXPECT_EQ(empty({0, int64_t(1) << 30, int64_t(1) << 29}).numel(), 0);
}

TEST(Factory, FillValuesThatDoNotFitTheDtypeAreRefused) {
  // PyTorch's rule for fill_, full, masked_fill and where's scalars (measured there): a value
  // outside the dtype is an error, not a wrapped or infinite element; uint8 takes -255..-1,
  // which wrap; NaN and infinities fit floating types only; a float value is truncated.
  const Tensor mask = tensor<bool>({true, false});
  EXPECT_EQ(values_of(full({2}, -1, kUInt8)), (std::vector<double>{255, 255}));
  EXPECT_THROW_MSG(
      full({2}, 300, kUInt8),
      ValueError,
      "[full] value 300 cannot be converted to uint8 without overflow");
  Tensor u = zeros({2}, kUInt8);
  EXPECT_THROW_MSG(u.fill_(256), ValueError, "[fill_] value 256 cannot be converted to uint8");
  EXPECT_EQ(values_of(u), (std::vector<double>{0, 0}));  // nothing written
  EXPECT_THROW_MSG(masked_fill(u, mask, -256), ValueError, "[masked_fill] value -256");
  EXPECT_THROW_MSG(u.masked_fill_(mask, 1e3), ValueError, "[masked_fill_] value 1000");
  Tensor i = zeros({2}, kInt32);
  EXPECT_THROW_MSG(i.fill_(NAN), ValueError, "[fill_] value nan cannot be converted to int32");
  EXPECT_THROW_MSG(i.fill_(int64_t(1) << 40), ValueError, "value 1099511627776");
  EXPECT_EQ(values_of(i.fill_(3.7)), (std::vector<double>{3, 3}));
  EXPECT_EQ(
      values_of(full({1}, std::numeric_limits<int64_t>::max(), kInt64)),
      (std::vector<double>{double(std::numeric_limits<int64_t>::max())}));
  EXPECT_THROW_MSG(full({1}, 1e19, kInt64), ValueError, "cannot be converted to int64");
  Tensor h = zeros({2}, kFloat16);
  EXPECT_THROW_MSG(
      h.fill_(1e6), ValueError, "[fill_] value 1000000 cannot be converted to float16");
  EXPECT_THROW_MSG(h.fill_(65519.0), ValueError, "cannot be converted to float16");
  EXPECT_EQ(values_of(h.fill_(65504.0)), (std::vector<double>{65504, 65504}));
  EXPECT_TRUE(std::isinf(values_of(h.fill_(INFINITY))[0]));
  EXPECT_TRUE(std::isnan(values_of(h.fill_(NAN))[0]));
  EXPECT_THROW_MSG(
      where(mask, zeros({2}, kFloat16), Scalar(1e5)),
      ValueError,
      "[where] value 100000 cannot be converted to float16");
  EXPECT_THROW_MSG(zeros({1}).fill_(1e39), ValueError, "cannot be converted to float32");
  EXPECT_THROW_MSG(
      zeros({1}, kBFloat16).fill_(1e39), ValueError, "cannot be converted to bfloat16");
  // Arithmetic with a scalar is not checked: it wraps, as PyTorch's.
  EXPECT_EQ(values_of(add(zeros({2}, kUInt8), Scalar(300))), (std::vector<double>{44, 44}));
}
