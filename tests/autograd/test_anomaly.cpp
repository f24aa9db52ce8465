// detect_anomaly: under the guard a backward that produces NaN or infinity throws, naming the
// node's op, the gradient, and the op that created the input it is for; without the guard the
// same backward runs to the end, leaves the NaN in .grad() and checks nothing.
#include <cmath>

#include "autograd/node.h"
#include "support/test_support.h"

using namespace ignis;

namespace {

// sqrt(x) * 0: the mul hands sqrt's backward a zero gradient, and sqrt's backward divides it
// by 2 sqrt(x), which is 0 at x = 0, so the gradient of x[0] is 0/0 = NaN (x[1] = 4 is fine).
Tensor nan_at_zero(const Tensor& x) { return mul(sqrt(x), 0.0).sum(); }

Tensor leaf() {
  Tensor x = tensor<float>({0.f, 4.f});
  x.requires_grad_(true);
  return x;
}

}  // namespace

TEST(DetectAnomaly, NamesTheOpWhoseBackwardGaveNan) {
  Tensor x = leaf();
  autograd::detect_anomaly guard;
  EXPECT_THROW_MSG(nan_at_zero(x).backward(), ValueError,
                   "the backward of 'sqrt' returned nan in its gradient 0 (shape [2], float32); "
                   "that input was created by a leaf tensor");
}

TEST(DetectAnomaly, NamesTheForwardOpThatCreatedTheInput) {
  Tensor x = leaf();
  autograd::detect_anomaly guard;
  // exp(x) - 1 is 0 at x = 0, so sqrt's backward gives NaN again, this time for an input
  // that sub created.
  EXPECT_THROW_MSG(nan_at_zero(sub(exp(x), 1.0)).backward(), ValueError,
                   "the backward of 'sqrt' returned nan in its gradient 0 (shape [2], float32); "
                   "that input was created by the forward op 'sub'");
}

TEST(DetectAnomaly, InfinityIsReportedAsInf) {
  // d sqrt(x)/dx at 0 is 1 / 0 = inf.
  Tensor x = leaf();
  autograd::detect_anomaly guard;
  EXPECT_THROW_MSG(sqrt(x).sum().backward(), ValueError, "'sqrt' returned inf in its gradient 0");
}

TEST(DetectAnomaly, OffChecksNothingAndLeavesTheNan) {
  ASSERT_FALSE(autograd::is_anomaly_enabled());
  Tensor x = leaf();
  const uint64_t before = detail::anomaly_checks();
  nan_at_zero(x).backward();
  EXPECT_EQ(detail::anomaly_checks(), before);
  const std::vector<float> g = x.grad().to_vector<float>();
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(g[1], 0.f);
}

TEST(DetectAnomaly, OnChecksEveryGradientAndPassesFiniteOnes) {
  Tensor x = tensor<float>({1.f, 4.f});
  x.requires_grad_(true);
  const uint64_t before = detail::anomaly_checks();
  {
    autograd::detect_anomaly guard;
    EXPECT_TRUE(autograd::is_anomaly_enabled());
    mul(sqrt(x), 2.0).sum().backward();  // sum, mul and sqrt each produce one gradient
  }
  EXPECT_FALSE(autograd::is_anomaly_enabled());  // the guard restores the previous state
  EXPECT_EQ(detail::anomaly_checks() - before, 3u);
  // d/dx 2 sqrt(x) = 1 / sqrt(x).
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1.f, 0.5f}));
}
