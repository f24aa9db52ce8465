// dtype sizes, names, PyTorch's promotion table, result_type with scalars and 0-dim tensors,
// and the 16-bit float conversions against exhaustive float64 references.
#include <cmath>

#include "ops/elementwise.h"
#include "support/test_support.h"

namespace ig = ignis;
using namespace ignis;

TEST(DType, SizesAndNames) {
  EXPECT_EQ(itemsize(kFloat32), 4);
  EXPECT_EQ(itemsize(kFloat64), 8);
  EXPECT_EQ(itemsize(kBFloat16), 2);
  EXPECT_EQ(itemsize(kFloat16), 2);
  EXPECT_EQ(itemsize(kInt64), 8);
  EXPECT_EQ(itemsize(kInt32), 4);
  EXPECT_EQ(itemsize(kUInt8), 1);
  EXPECT_EQ(itemsize(kBool), 1);
  EXPECT_STREQ(dtype_name(kBFloat16), "bfloat16");
  EXPECT_STREQ(dtype_name(kBool), "bool");
}

// The full table of torch.promote_types for the eight dtypes (from PyTorch's documentation
// of type promotion): order bool < uint8 < int32 < int64 < {bf16, f16} < f32 < f64, and
// bf16 with f16 gives f32.
TEST(DType, PromoteTypesMatchesPyTorchTable) {
  const DType order[] = {kBool, kUInt8, kInt32, kInt64, kBFloat16, kFloat32, kFloat64};
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 7; ++j)
      EXPECT_EQ(promote_types(order[i], order[j]), order[std::max(i, j)])
          << dtype_name(order[i]) << " + " << dtype_name(order[j]);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
  EXPECT_EQ(promote_types(kBFloat16, kFloat16), kFloat32);
  EXPECT_EQ(promote_types(kFloat16, kInt64), kFloat16);
  EXPECT_EQ(promote_types(kFloat16, kFloat64), kFloat64);
}

TEST(DType, ResultTypeWithScalarsAndZeroDim) {
  Tensor i32 = zeros({3}, kInt32), f16 = zeros({3}, kFloat16), b = zeros({3}, kBool);
  Tensor f64_0d = zeros({}, kFloat64), i64_0d = zeros({}, kInt64);
  auto rt = [](std::initializer_list<ElementwiseOperand> ops) { return detail::result_type(ops); };
  Scalar two(2), half(0.5), yes(true);
  EXPECT_EQ(rt({i32, two}), kInt32);          // int scalar keeps the tensor's int type
  EXPECT_EQ(rt({i32, half}), kFloat32);       // float scalar: default dtype
  EXPECT_EQ(rt({f16, half}), kFloat16);       // same category: tensor wins
  EXPECT_EQ(rt({b, two}), kInt64);            // bool tensor + int scalar
  EXPECT_EQ(rt({b, yes}), kBool);
  EXPECT_EQ(rt({i32, f64_0d}), kFloat64);     // 0-dim of higher category keeps its dtype
  EXPECT_EQ(rt({f16, f64_0d}), kFloat16);     // same category: dimensioned wins
  EXPECT_EQ(rt({i32, i64_0d}), kInt32);
  EXPECT_EQ(rt({f64_0d, half}), kFloat64);
  EXPECT_EQ(rt({i64_0d, half}), kFloat32);
}

TEST(Half, ConversionRoundsToNearestEvenEverywhere) {
  // Every half value converts to float and back unchanged.
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const Half h = Half::from_bits(uint16_t(bits));
    const float f = float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float(Half(f))));
      continue;
    }
    ASSERT_EQ(Half(f).bits, h.bits) << "bits " << bits;
  }
  // Values between neighbours round to nearest, ties to even (checked in double).
  for (uint32_t bits = 0; bits < 0x7bff; ++bits) {
    const double lo = float(Half::from_bits(uint16_t(bits)));
    const double hi = float(Half::from_bits(uint16_t(bits + 1)));
    const double mid = (lo + hi) / 2;
    const uint16_t even = (bits & 1) ? uint16_t(bits + 1) : uint16_t(bits);
    ASSERT_EQ(Half(float(mid)).bits, even) << "tie above bits " << bits;
    ASSERT_EQ(Half(float(lo + (hi - lo) * 0.25)).bits, bits);
    ASSERT_EQ(Half(float(lo + (hi - lo) * 0.75)).bits, bits + 1);
  }
  EXPECT_TRUE(std::isinf(float(Half(65520.0f))));
  EXPECT_EQ(float(Half(65519.0f)), 65504.0f);
  EXPECT_EQ(float(Half(-0.0f)), 0.0f);
  EXPECT_TRUE(std::signbit(float(Half(-0.0f))));
}

TEST(BFloat16, ConversionRoundsToNearestEven) {
  for (uint32_t bits = 0; bits < 0x7f7f; bits += 7) {
    const double lo = float(BFloat16::from_bits(uint16_t(bits)));
    const double hi = float(BFloat16::from_bits(uint16_t(bits + 1)));
    ASSERT_EQ(BFloat16(float(lo)).bits, bits);
    const uint16_t even = (bits & 1) ? uint16_t(bits + 1) : uint16_t(bits);
    ASSERT_EQ(BFloat16(float((lo + hi) / 2)).bits, even) << bits;
    ASSERT_EQ(BFloat16(float(lo + (hi - lo) * 0.7)).bits, bits + 1);
  }
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
  EXPECT_TRUE(std::isinf(float(BFloat16(INFINITY))));
}

TEST(Device, ParsesAndRejects) {
  EXPECT_TRUE(Device("cpu").is_cpu());
  EXPECT_EQ(Device("cuda:1"), Device::cuda(1));
  EXPECT_EQ(Device("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::cuda(3).str(), "cuda:3");
  EXPECT_THROW_MSG(Device("gpu"), ValueError, "cannot parse device 'gpu'");
  EXPECT_THROW_MSG(Device("cuda:x"), ValueError, "'cuda:x'");
  EXPECT_THROW_MSG(Device("cuda:-1"), ValueError, "cuda:N");
}

TEST(Cuda, QueriesNeverThrow) {
  // Without a GPU (or a driver) these answer "none"; with one they count it.
  EXPECT_EQ(cuda::is_available(), cuda::device_count() > 0);
  if (!cuda::is_available()) {
    EXPECT_THROW_MSG(zeros({2}, Device::cuda(0)), DeviceError, "cuda");
  }
}
