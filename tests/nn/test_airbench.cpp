// The airbench network's pieces against float64 loops written here: dirac_ (PyTorch's
// definition), the patch covariance, the whitening filters (which must whiten: W C W^T is
// diagonal with entries L / (L + eps)), the state-dict layout the PyTorch twin loads, and
// test-time augmentation through a probe module whose logits are its input pixels.
#include <gtest/gtest.h>

#include <cmath>

#include "ignis/data/transforms.h"
#include "ignis/models.h"
#include "ignis/nn/init.h"
#include "ignis/nn_ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

TEST(DiracInit, MatchesPyTorchsDefinitionWithGroups) {
  for (auto [out, in, groups] : {std::tuple<int64_t, int64_t, int64_t>{6, 4, 1}, {4, 6, 1},
                                 {6, 2, 2}, {6, 3, 3}}) {
    SCOPED_TRACE(::testing::Message() << out << "x" << in << " groups " << groups);
    Tensor w = full({out, in, 3, 5}, 7.0);
    nn::init::dirac_(w, groups);
    std::vector<double> expect;
    const int64_t per_group = out / groups;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i)
        for (int64_t y = 0; y < 3; ++y)
          for (int64_t x = 0; x < 5; ++x) {
            const int64_t d = o % per_group;
            expect.push_back(d < std::min(per_group, in) && i == d && y == 1 && x == 2 ? 1.0 : 0.0);
          }
    EXPECT_TRUE(all_close(w, expect, 0, 0));
  }
}

TEST(DiracInit, OnAViewPassesThoseInputsThroughAConvolution) {
  manual_seed(4);
  Tensor w = randn({5, 3, 3, 3});
  const auto before = values_of(w);
  Tensor first = w.narrow(0, 0, 3);
  nn::init::dirac_(first);
  const auto after = values_of(w);
  for (size_t i = 27 * 3; i < after.size(); ++i) EXPECT_EQ(after[i], before[i]);  // untouched
  const Tensor x = random_tensor({2, 3, 6, 6}, -1, 1, 5).to(kFloat32);
  const Tensor y = conv2d(x, w, Tensor(), {.padding = {1, 1}});
  EXPECT_TRUE(all_close(y.narrow(1, 0, 3), values_of(x), 0, 0));
  EXPECT_THROW_MSG(nn::init::dirac_(w, 2), ValueError, "divisible");
}

/// Images whose channels are correlated (a shared base plus noise), so whitening has work.
Tensor correlated_images(int64_t n, int64_t side, uint64_t seed) {
  const Tensor base = random_tensor({n, 1, side, side}, -1, 1, seed);
  const Tensor noise = random_tensor({n, 3, side, side}, -0.3, 0.3, seed + 1);
  return (base.expand({n, 3, side, side}) + noise).to(kFloat32);
}

/// E[p p^T] over all 2x2 patches, patch order (channel, dy, dx), in float64 loops.
std::vector<double> covariance_by_loops(const Tensor& images, int64_t k) {
  const auto v = values_of(images);
  const int64_t N = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  const int64_t F = C * k * k;
  std::vector<double> cov(size_t(F * F), 0.0);
  std::vector<double> p(static_cast<size_t>(F));
  int64_t count = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t y = 0; y + k <= H; ++y)
      for (int64_t x = 0; x + k <= W; ++x, ++count) {
        for (int64_t c = 0; c < C; ++c)
          for (int64_t dy = 0; dy < k; ++dy)
            for (int64_t dx = 0; dx < k; ++dx)
              p[size_t((c * k + dy) * k + dx)] = v[size_t(((n * C + c) * H + y + dy) * W + x + dx)];
        for (int64_t i = 0; i < F; ++i)
          for (int64_t j = 0; j < F; ++j) cov[size_t(i * F + j)] += p[size_t(i)] * p[size_t(j)];
      }
  for (double& c : cov) c /= double(count);
  return cov;
}

TEST(Airbench, PatchCovarianceMatchesLoops) {
  const Tensor images = correlated_images(3, 6, 11);
  for (int64_t k : {1, 2, 3}) {
    SCOPED_TRACE(::testing::Message() << "k " << k);
    const Tensor cov = models::patch_covariance(images, k);
    EXPECT_EQ(cov.dtype(), kFloat64);
    EXPECT_TRUE(all_close(cov, covariance_by_loops(images, k), 1e-6, 1e-9));
  }
}

TEST(Airbench, WhiteningFiltersWhitenThePatches) {
  manual_seed(0);
  models::AirbenchNet net;
  const Tensor images = correlated_images(40, 8, 21);
  const double eps = 5e-4;
  net.init_whitening(images, eps);
  const auto C = covariance_by_loops(images, 2);
  const auto w = values_of(net.whiten.weight);  // [24, 3, 2, 2]
  ASSERT_EQ(net.whiten.weight.sizes(), Shape({24, 3, 2, 2}));
  const int64_t F = 12;
  double trace = 0, eigen_sum = 0, previous = 2;
  for (int64_t i = 0; i < F; ++i) trace += C[size_t(i * F + i)];
  for (int64_t a = 0; a < F; ++a) {
    for (int64_t f = 0; f < F; ++f)  // the second half is the first negated
      EXPECT_EQ(w[size_t((F + a) * F + f)], -w[size_t(a * F + f)]);
    for (int64_t b = 0; b < F; ++b) {
      double wcw = 0;  // (W C W^T)_ab
      for (int64_t i = 0; i < F; ++i)
        for (int64_t j = 0; j < F; ++j)
          wcw += w[size_t(a * F + i)] * C[size_t(i * F + j)] * w[size_t(b * F + j)];
      if (a != b) {
        EXPECT_NEAR(wcw, 0.0, 1e-5) << a << "," << b;
        continue;
      }
      // d = L / (L + eps) in (0, 1), largest eigenvalue first; L recovered from d.
      EXPECT_GT(wcw, 0);
      EXPECT_LT(wcw, 1);
      EXPECT_LE(wcw, previous + 1e-6) << "filter " << a << " out of order";
      previous = wcw;
      eigen_sum += eps * wcw / (1 - wcw);
    }
  }
  EXPECT_NEAR(eigen_sum, trace, 1e-4 * trace);
}

TEST(Airbench, StateDictIsTheTwinsAndOnlyTheRecipesTensorsTrain) {
  models::AirbenchNet net;
  std::vector<std::string> trainable, frozen;
  for (auto& [name, p] : net.named_parameters()) (p.requires_grad() ? trainable : frozen).push_back(name);
  EXPECT_EQ(frozen, (std::vector<std::string>{"whiten.weight", "block1.norm1.weight",
                                              "block1.norm2.weight", "block2.norm1.weight",
                                              "block2.norm2.weight", "block3.norm1.weight",
                                              "block3.norm2.weight"}));
  EXPECT_EQ(trainable.size(), 1u + 3 * 4 + 1);  // whiten.bias, 2 convs + 2 biases per block, head
  const auto sd = net.state_dict();
  EXPECT_EQ(sd.size(), 2u + 3 * (2 + 2 * 5) + 1);
  EXPECT_EQ(sd.at("whiten.bias").sizes(), Shape({24}));
  EXPECT_EQ(sd.at("block1.conv1.weight").sizes(), Shape({64, 24, 3, 3}));
  EXPECT_EQ(sd.at("block2.conv2.weight").sizes(), Shape({256, 256, 3, 3}));
  EXPECT_EQ(sd.at("block3.norm2.running_var").sizes(), Shape({256}));
  EXPECT_EQ(sd.at("head.weight").sizes(), Shape({10, 256}));
  EXPECT_EQ(net.block1.norm1.config.eps, 1e-12);
  EXPECT_EQ(net.block1.norm1.config.momentum, 0.4);
  EXPECT_TRUE(all_close(net.whiten.bias, std::vector<double>(24, 0.0), 0, 0));
  // The blocks' convolutions start as identities on their first inputs.
  const auto w = values_of(net.block2.conv1.weight);  // [256, 64, 3, 3]
  EXPECT_EQ(w[size_t((5 * 64 + 5) * 9 + 4)], 1.0);
  EXPECT_EQ(w[size_t((5 * 64 + 6) * 9 + 4)], 0.0);
  manual_seed(3);
  const Tensor logits = net(randn({2, 3, 32, 32}));
  EXPECT_EQ(logits.sizes(), Shape({2, 10}));
}

/// logits = the input's pixels, so every view's contribution can be traced by hand.
struct Probe : nn::Module {
  Tensor forward(const Tensor& x) override { return x.flatten(1); }
};

TEST(Airbench, TestTimeAugmentationAveragesTheDocumentedViews) {
  const int64_t N = 2, Cn = 1, H = 4, W = 5;
  const Tensor x = random_tensor({N, Cn, H, W}, -1, 1, 8).to(kFloat32);
  const auto v = values_of(x);
  auto reflect = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
  // Pixel (y, x) of the image moved by (dy, dx), optionally mirrored afterwards.
  auto view = [&](int64_t n, int64_t y, int64_t c, int64_t dy, int64_t dx, bool mirror) {
    const int64_t xx = mirror ? W - 1 - c : c;
    return v[size_t((n * H + reflect(y - dy, H)) * W + reflect(xx - dx, W))];
  };
  std::vector<double> level1, level2;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t c = 0; c < W; ++c) {
        auto mirrored = [&](int64_t dy, int64_t dx) {
          return 0.5 * view(n, y, c, dy, dx, false) + 0.5 * view(n, y, c, dy, dx, true);
        };
        level1.push_back(mirrored(0, 0));
        level2.push_back(0.5 * mirrored(0, 0) + 0.25 * (mirrored(1, 1) + mirrored(-1, -1)));
      }
  Probe probe;
  EXPECT_TRUE(all_close(models::tta_logits(probe, x, 0), v, 0, 0));
  EXPECT_TRUE(all_close(models::tta_logits(probe, x, 1), level1, 1e-6, 1e-7));
  EXPECT_TRUE(all_close(models::tta_logits(probe, x, 2), level2, 1e-6, 1e-7));
  EXPECT_THROW_MSG(models::tta_logits(probe, x, 3), ValueError, "[tta_logits]");
  // A 16-bit model's logits (autocast) are averaged in float32.
  struct Bf16Probe : nn::Module {
    Tensor forward(const Tensor& v) override { return v.flatten(1).to(kBFloat16); }
  } bf16_probe;
  const Tensor xb = x.to(kBFloat16).to(kFloat32);  // values bf16 holds exactly
  const Tensor averaged = models::tta_logits(bf16_probe, xb, 1);
  EXPECT_EQ(averaged.dtype(), kFloat32);
  std::vector<double> level1_b;
  const auto vb = values_of(xb);
  for (int64_t i = 0; i < xb.numel(); ++i) {
    const int64_t c = i % W;
    level1_b.push_back(0.5 * vb[size_t(i)] + 0.5 * vb[size_t(i - c + W - 1 - c)]);
  }
  EXPECT_TRUE(all_close(averaged, level1_b, 1e-7, 0));
}

}  // namespace
}  // namespace ignis::testing
