// Tensor::str() against PyTorch's printing (torch 1.13, default print options). The expected
// strings are the format specification, copied from PyTorch's output with "torch." removed
// from dtype names.
#include <cmath>
#include <sstream>

#include "ignis/cuda.h"
#include "support/test_support.h"

namespace ignis {
namespace {

const float kNan = std::nanf("");
const float kInf = INFINITY;

TEST(Print, FixedPointCommonWidth) {
  EXPECT_EQ(tensor<float>({1.0f, -2.5f, 3.0f, 4.0f}, Shape{2, 2}).str(),
            "tensor([[ 1.0000, -2.5000],\n"
            "        [ 3.0000,  4.0000]])");
  EXPECT_EQ(tensor<float>({1.5f, 2.5f}, Shape{2, 1}).str(),
            "tensor([[1.5000],\n"
            "        [2.5000]])");
  EXPECT_EQ(tensor<float>({2.5f}).str(), "tensor([2.5000])");
  // Rounding to 4 decimals is the correctly rounded decimal of the stored value.
  EXPECT_EQ(tensor<double>({0.0625, 0.1875, 0.3125}).str(),
            "tensor([0.0625, 0.1875, 0.3125], dtype=float64)");
}

TEST(Print, IntegerValuedFloats) {
  EXPECT_EQ(tensor<float>({1, 2, 3}).str(), "tensor([1., 2., 3.])");
  EXPECT_EQ(tensor<float>({-1, 20, 3, 0}, Shape{2, 2}).str(),
            "tensor([[-1., 20.],\n"
            "        [ 3.,  0.]])");
  EXPECT_EQ(zeros({3}).str(), "tensor([0., 0., 0.])");
  EXPECT_EQ(tensor<float>({-0.0f, 1.0f}).str(), "tensor([-0., 1.])");
  // Non-contiguous views print their logical order.
  EXPECT_EQ(arange(6.0).reshape({2, 3}).t().str(),
            "tensor([[0., 3.],\n"
            "        [1., 4.],\n"
            "        [2., 5.]])");
}

TEST(Print, ScientificNotation) {
  EXPECT_EQ(tensor<float>({1e-5f, 1.0f}).str(), "tensor([1.0000e-05, 1.0000e+00])");  // min < 1e-4
  EXPECT_EQ(tensor<float>({1.5f, 2000.5f}).str(), "tensor([1.5000e+00, 2.0005e+03])");  // ratio
  EXPECT_EQ(tensor<float>({1e9f, 2e9f}).str(), "tensor([1.0000e+09, 2.0000e+09])");  // > 1e8
  EXPECT_EQ(tensor<float>({1, 2000}).str(), "tensor([1.0000e+00, 2.0000e+03])");  // int ratio
  EXPECT_EQ(tensor<double>({123456789.0}).str(), "tensor([1.2346e+08], dtype=float64)");
  EXPECT_EQ(tensor<float>({0.00015f, 123.45678f, -99.99995f}).str(),
            "tensor([ 1.5000e-04,  1.2346e+02, -1.0000e+02])");
  EXPECT_EQ(tensor<double>({1e-10, 1e10, -1.0, 3.0}, Shape{2, 2}).str(),
            "tensor([[ 1.0000e-10,  1.0000e+10],\n"
            "        [-1.0000e+00,  3.0000e+00]], dtype=float64)");
  EXPECT_EQ(tensor<double>({1e100, -1e-100}).str(),
            "tensor([ 1.0000e+100, -1.0000e-100], dtype=float64)");
}

TEST(Print, NanAndInf) {
  EXPECT_EQ(tensor<float>({kNan, kInf, -kInf, 1.5f}).str(),
            "tensor([   nan,    inf,   -inf, 1.5000])");
  EXPECT_EQ(tensor<float>({kNan, 1, 2}).str(), "tensor([nan, 1., 2.])");
  EXPECT_EQ(tensor<float>({kNan, kInf}).str(), "tensor([nan, inf])");
  // A NaN with its sign bit set (0 * -inf, -nan) prints as nan too, as PyTorch's.
  EXPECT_EQ(tensor<float>({-kNan, 2}).str(), "tensor([nan, 2.])");
  EXPECT_EQ((tensor<double>({0.0}) * -kInf).str(), "tensor([nan], dtype=float64)");
  EXPECT_EQ(tensor<float>({1e-5f, kNan, 3.0f}).str(), "tensor([1.0000e-05,        nan, 3.0000e+00])");
  EXPECT_EQ(scalar_tensor(kNan).str(), "tensor(nan)");
}

TEST(Print, ZeroDim) {
  EXPECT_EQ(scalar_tensor(3.5).str(), "tensor(3.5000)");
  EXPECT_EQ(scalar_tensor(2.0).str(), "tensor(2.)");
  EXPECT_EQ(scalar_tensor(7).str(), "tensor(7)");
  EXPECT_EQ(scalar_tensor(true).str(), "tensor(True)");
  EXPECT_EQ(scalar_tensor(0.1, kFloat64).str(), "tensor(0.1000, dtype=float64)");
}

TEST(Print, Empty) {
  EXPECT_EQ(tensor<float>(std::vector<float>{}).str(), "tensor([])");
  EXPECT_EQ(zeros({0}, kInt64).str(), "tensor([], dtype=int64)");
  EXPECT_EQ(zeros({0, 3}).str(), "tensor([], size=(0, 3))");
  EXPECT_EQ(zeros({2, 0}, kFloat64).str(), "tensor([], size=(2, 0), dtype=float64)");
  EXPECT_EQ(zeros({2, 0, 3}, kInt64).str(), "tensor([], size=(2, 0, 3), dtype=int64)");
}

TEST(Print, IntegersAndBools) {
  EXPECT_EQ(tensor<int64_t>({1, -20, 300}).str(), "tensor([  1, -20, 300])");
  EXPECT_EQ(tensor<int32_t>({1, 2, 3, 4}, Shape{2, 2}).str(),
            "tensor([[1, 2],\n"
            "        [3, 4]], dtype=int32)");
  EXPECT_EQ(tensor<uint8_t>({0, 255}).str(), "tensor([  0, 255], dtype=uint8)");
  EXPECT_EQ(tensor<int64_t>({INT64_MIN, INT64_MAX}).str(),
            "tensor([-9223372036854775808,  9223372036854775807])");
  EXPECT_EQ(tensor<bool>({true, false, true}).str(), "tensor([ True, False,  True])");
}

TEST(Print, SixteenBitFloats) {
  EXPECT_EQ(tensor<float>({1.5f, 2.25f}).to(kBFloat16).str(),
            "tensor([1.5000, 2.2500], dtype=bfloat16)");
  EXPECT_EQ(tensor<float>({0.1f, 2.0f}).to(kFloat16).str(),
            "tensor([0.1000, 2.0000], dtype=float16)");
  EXPECT_EQ(tensor<float>({1e-5f}, Shape{1, 1}).to(kFloat16).str(),
            "tensor([[1.0014e-05]], dtype=float16)");
}

TEST(Print, LineWrapping) {
  EXPECT_EQ((arange(30.0) / 7).str(),
            "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
            "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
            "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
            "        3.8571, 4.0000, 4.1429])");
  EXPECT_EQ(arange(40).str(),
            "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n"
            "        36, 37, 38, 39])");
  EXPECT_EQ((arange(20, kFloat64) * 1.25).str(),
            "tensor([ 0.0000,  1.2500,  2.5000,  3.7500,  5.0000,  6.2500,  7.5000,  8.7500,\n"
            "        10.0000, 11.2500, 12.5000, 13.7500, 15.0000, 16.2500, 17.5000, 18.7500,\n"
            "        20.0000, 21.2500, 22.5000, 23.7500], dtype=float64)");
  // A suffix that does not fit on the last line goes on its own line.
  EXPECT_EQ((arange(18, kFloat64) * 0.5 + 0.25).str(),
            "tensor([0.2500, 0.7500, 1.2500, 1.7500, 2.2500, 2.7500, 3.2500, 3.7500, 4.2500,\n"
            "        4.7500, 5.2500, 5.7500, 6.2500, 6.7500, 7.2500, 7.7500, 8.2500, 8.7500],\n"
            "       dtype=float64)");
}

TEST(Print, HigherDims) {
  EXPECT_EQ(arange(8.0).reshape({2, 2, 2}).str(),
            "tensor([[[0., 1.],\n"
            "         [2., 3.]],\n"
            "\n"
            "        [[4., 5.],\n"
            "         [6., 7.]]])");
  EXPECT_EQ(arange(16).reshape({2, 2, 2, 2}).str(),
            "tensor([[[[ 0,  1],\n"
            "          [ 2,  3]],\n"
            "\n"
            "         [[ 4,  5],\n"
            "          [ 6,  7]]],\n"
            "\n"
            "\n"
            "        [[[ 8,  9],\n"
            "          [10, 11]],\n"
            "\n"
            "         [[12, 13],\n"
            "          [14, 15]]]])");
}

TEST(Print, Summarised) {
  EXPECT_EQ(arange(2000.0).str(),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
            "        1.9990e+03])");
  // The width comes from the shown elements only.
  EXPECT_EQ(arange(1001).str(), "tensor([   0,    1,    2,  ...,  998,  999, 1000])");
  EXPECT_EQ((arange(1200.0).reshape({40, 30}) / 3).str(),
            "tensor([[0.0000e+00, 3.3333e-01, 6.6667e-01,  ..., 9.0000e+00, 9.3333e+00,\n"
            "         9.6667e+00],\n"
            "        [1.0000e+01, 1.0333e+01, 1.0667e+01,  ..., 1.9000e+01, 1.9333e+01,\n"
            "         1.9667e+01],\n"
            "        [2.0000e+01, 2.0333e+01, 2.0667e+01,  ..., 2.9000e+01, 2.9333e+01,\n"
            "         2.9667e+01],\n"
            "        ...,\n"
            "        [3.7000e+02, 3.7033e+02, 3.7067e+02,  ..., 3.7900e+02, 3.7933e+02,\n"
            "         3.7967e+02],\n"
            "        [3.8000e+02, 3.8033e+02, 3.8067e+02,  ..., 3.8900e+02, 3.8933e+02,\n"
            "         3.8967e+02],\n"
            "        [3.9000e+02, 3.9033e+02, 3.9067e+02,  ..., 3.9900e+02, 3.9933e+02,\n"
            "         3.9967e+02]])");
  EXPECT_EQ(arange(1200).reshape({2, 20, 30}).str(),
            "tensor([[[   0,    1,    2,  ...,   27,   28,   29],\n"
            "         [  30,   31,   32,  ...,   57,   58,   59],\n"
            "         [  60,   61,   62,  ...,   87,   88,   89],\n"
            "         ...,\n"
            "         [ 510,  511,  512,  ...,  537,  538,  539],\n"
            "         [ 540,  541,  542,  ...,  567,  568,  569],\n"
            "         [ 570,  571,  572,  ...,  597,  598,  599]],\n"
            "\n"
            "        [[ 600,  601,  602,  ...,  627,  628,  629],\n"
            "         [ 630,  631,  632,  ...,  657,  658,  659],\n"
            "         [ 660,  661,  662,  ...,  687,  688,  689],\n"
            "         ...,\n"
            "         [1110, 1111, 1112,  ..., 1137, 1138, 1139],\n"
            "         [1140, 1141, 1142,  ..., 1167, 1168, 1169],\n"
            "         [1170, 1171, 1172,  ..., 1197, 1198, 1199]]])");
  // A summarised outer dimension of a 3-D tensor, with a dtype suffix.
  const std::string s = arange(7 * 11 * 13, kInt32).reshape({7, 11, 13}).str();
  const std::string head = "tensor([[[   0,    1,    2,  ...,   10,   11,   12],\n         [  13,";
  EXPECT_EQ(s.substr(0, head.size()), head);
  EXPECT_NE(s.find("         [ 416,  417,  418,  ...,  426,  427,  428]],\n\n        ...,\n\n"
                   "        [[ 572,  573,  574,  ...,  582,  583,  584],"),
            std::string::npos)
      << s;
  const std::string tail = "\n         [ 988,  989,  990,  ...,  998,  999, 1000]]], dtype=int32)";
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail);
  // Exactly 1000 elements are not summarised.
  EXPECT_EQ(arange(1000).str().find("..."), std::string::npos);
}

TEST(Print, StreamOperatorAndDevice) {
  std::ostringstream os;
  os << tensor<float>({1, 2});
  EXPECT_EQ(os.str(), "tensor([1., 2.])");
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  EXPECT_EQ(tensor<float>({1.5f, 2}).cuda().str(), "tensor([1.5000, 2.0000], device='cuda:0')");
  EXPECT_EQ(tensor<int32_t>({1}).cuda().str(), "tensor([1], device='cuda:0', dtype=int32)");
}

}  // namespace
}  // namespace ignis
