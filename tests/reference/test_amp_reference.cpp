// Autocast against PyTorch 1.13: every case of make_amp_cases.py (run first, as a CTest fixture)
// is recomputed by Ignis under amp::autocast(kBFloat16) from the same inputs; the result must
// have PyTorch's dtype and values. bf16 results may differ by a bf16 rounding step (float
// accumulation in another order), float32 ones by float32 rounding. The file is named by
// IGNIS_AMP_CASES.
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "support/test_support.h"

namespace ignis {
namespace {

namespace F = nn::functional;
using Case = std::function<Tensor(const std::map<std::string, Tensor>&)>;

const TensorFile& cases() {
  static const TensorFile file = [] {
    const char* path = std::getenv("IGNIS_AMP_CASES");
    if (!path) throw ValueError("IGNIS_AMP_CASES is not set (make_amp_cases.py --out FILE)");
    return load_file(path);
  }();
  return file;
}

/// The ops, by case name, computed from the inputs (names without "in/").
std::map<std::string, Case> ops() {
  using In = const std::map<std::string, Tensor>&;
  return {
      {"mm", [](In i) { return mm(i.at("x"), i.at("w").t()); }},
      {"matmul_3d", [](In i) { return matmul(i.at("x3"), i.at("w").t()); }},
      {"bmm", [](In i) { return bmm(i.at("x3"), i.at("x3").transpose(1, 2)); }},
      {"addmm", [](In i) { return addmm(i.at("b"), i.at("x"), i.at("w").t()); }},
      {"linear", [](In i) { return F::linear(i.at("x"), i.at("w"), i.at("b")); }},
      {"conv2d",
       [](In i) {
         return conv2d(i.at("img"), i.at("cw"), i.at("cb"), {.padding = {1, 1}});
       }},
      {"conv2d_strided",
       [](In i) {
         return conv2d(i.at("img"), i.at("cw"), Tensor(), {.stride = {2, 2}});
       }},
      {"mm_float64", [](In i) { return mm(i.at("x").to(kFloat64), i.at("w").t().to(kFloat64)); }},
      {"cross_entropy", [](In i) { return F::cross_entropy(i.at("logits"), i.at("target")); }},
      {"cross_entropy_smoothing",
       [](In i) {
         return F::cross_entropy(i.at("logits"), i.at("target"), {.label_smoothing = 0.1});
       }},
      {"nll_loss", [](In i) { return F::nll_loss(i.at("logits"), i.at("target")); }},
      {"mse_loss", [](In i) { return F::mse_loss(i.at("logits"), i.at("y")); }},
      {"l1_loss", [](In i) { return F::l1_loss(i.at("logits"), i.at("y")); }},
      {"smooth_l1_loss", [](In i) { return F::smooth_l1_loss(i.at("logits"), i.at("y")); }},
      {"bce_with_logits",
       [](In i) {
         return F::binary_cross_entropy_with_logits(i.at("logits"), sigmoid(i.at("y")));
       }},
      {"prod", [](In i) { return prod(i.at("pos")); }},
      {"add_mixed", [](In i) { return i.at("logits") + i.at("y").to(kFloat32); }},
      {"relu", [](In i) { return relu(i.at("logits")); }},
      {"max_pool2d",
       [](In i) {
         return max_pool2d(i.at("img").to(kBFloat16), {.kernel_size = {2, 2}});
       }},
      {"cuda_list/softmax", [](In i) { return softmax(i.at("logits"), 1); }},
      {"cuda_list/log_softmax", [](In i) { return log_softmax(i.at("logits"), 1); }},
      {"cuda_list/sum", [](In i) { return sum(i.at("logits")); }},
      {"cuda_list/exp", [](In i) { return exp(i.at("logits")); }},
      {"cuda_list/log", [](In i) { return log(i.at("pos")); }},
      {"cuda_list/pow", [](In i) { return pow(i.at("pos"), 3.0); }},
      {"cuda_list/layer_norm", [](In i) { return layer_norm(i.at("logits"), {7}); }},
      {"cuda_list/conv_transpose2d",
       [](In i) { return conv_transpose2d(i.at("img"), i.at("tw")); }},
  };
}

std::map<std::string, Tensor> inputs() {
  std::map<std::string, Tensor> in;
  for (const auto& [key, t] : cases().tensors)
    if (key.rfind("in/", 0) == 0) in[key.substr(3)] = t;
  return in;
}

/// bf16 results within two bf16 rounding steps of the largest magnitude's scale, float32
/// ones within float32 accumulation differences.
void expect_matches(const std::string& name, const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype()) << name << ": dtype " << dtype_name(got.dtype())
                                       << ", PyTorch's is " << dtype_name(want.dtype());
  ASSERT_EQ(got.sizes(), want.sizes()) << name;
  const double scale = want.numel() ? amax(want.to(kFloat64).abs(), {}).item<double>() : 1;
  const bool low = want.dtype() == kBFloat16;
  EXPECT_TRUE(testing::all_close(
      got, testing::values_of(want), low ? 1.0 / 128 : 1e-5, (low ? 1.0 / 128 : 1e-6) * scale))
      << name;
}

TEST(AmpReference, EveryOpMatchesPyTorch) {
  const std::map<std::string, Tensor> in = inputs();
  const auto table = ops();
  int checked = 0;
  for (const auto& [key, want] : cases().tensors) {
    if (key.rfind("out/", 0) != 0 || key.rfind("out/grad/", 0) == 0) continue;
    const std::string name = key.substr(4);
    auto op = table.find(name);
    ASSERT_NE(op, table.end()) << "no Ignis op for PyTorch case " << name;
    Tensor got;
    {
      amp::autocast ac(kBFloat16);
      got = op->second(in);
    }
    expect_matches(name, got, want);
    ++checked;
  }
  EXPECT_EQ(checked, int(table.size())) << "the file lacks cases the table has";
}

TEST(AmpReference, GradientsOfALinearLayer) {
  const std::map<std::string, Tensor> in = inputs();
  Tensor w = in.at("w").clone().requires_grad_(), b = in.at("b").clone().requires_grad_();
  Tensor loss;
  {
    amp::autocast ac(kBFloat16);
    loss = F::cross_entropy(F::linear(in.at("x"), w, b).narrow(1, 0, 7), in.at("target"));
  }
  loss.backward();
  const auto& out = cases().tensors;
  expect_matches("grad/loss", loss, out.at("out/grad/loss"));
  // The gradient is a bf16 product cast up: compare at bf16's precision.
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat32);
  expect_matches("grad/w", w.grad().to(kBFloat16), out.at("out/grad/w").to(kBFloat16));
  expect_matches("grad/b", b.grad().to(kBFloat16), out.at("out/grad/b").to(kBFloat16));
}

TEST(AmpReference, ConvBatchNormReluChain) {
  // Batch norm is on no autocast list: the conv's bf16 output is normalised in bf16 with the
  // float32 parameters and running statistics, and the chain's activations and gradients
  // have PyTorch's dtypes and values, composed or fused (batch_norm_relu), in both layouts.
  const std::map<std::string, Tensor> in = inputs();
  const auto& out = cases().tensors;
  for (const std::string layout : {"nchw", "cl"})
    for (bool fused : {false, true}) {
      const std::string prefix = "out/grad/conv_bn_relu_" + layout + "/";
      SCOPED_TRACE(prefix + (fused ? " fused" : " composed"));
      Tensor x = in.at("img").clone();
      if (layout == "cl") x = x.contiguous(MemoryFormat::channels_last);
      x.requires_grad_();
      Tensor w = in.at("cw").clone().requires_grad_();
      Tensor bn_w = in.at("bn_w").clone().requires_grad_(), bn_b = in.at("bn_b").clone().requires_grad_();
      Tensor rm = in.at("bn_rm").clone(), rv = in.at("bn_rv").clone();
      Tensor h, y;
      {
        amp::autocast ac(kBFloat16);
        h = conv2d(x, w, Tensor(), {.padding = {1, 1}});
        h.retain_grad();
        y = fused ? batch_norm_relu(h, rm, rv, bn_w, bn_b, true, 0.1, 1e-5)
                  : relu(batch_norm(h, rm, rv, bn_w, bn_b, true, 0.1, 1e-5));
        sum((y * in.at("bn_up")).to(kFloat32)).backward();
      }
      expect_matches("conv", h, out.at(prefix + "conv"));
      expect_matches("y", y, out.at(prefix + "y"));
      expect_matches("grad_conv", h.grad(), out.at(prefix + "grad_conv"));
      expect_matches("running_mean", rm, out.at(prefix + "running_mean"));
      expect_matches("running_var", rv, out.at(prefix + "running_var"));
      // float32 gradients of bf16 computations: compared at bf16's precision.
      for (const auto& [name, t] : {std::pair{"grad_x", x.grad()}, std::pair{"grad_w", w.grad()},
                                    std::pair{"grad_bn_w", bn_w.grad()},
                                    std::pair{"grad_bn_b", bn_b.grad()}}) {
        EXPECT_EQ(t.dtype(), kFloat32) << name;
        expect_matches(name, t.to(kBFloat16), out.at(prefix + name).to(kBFloat16));
      }
    }
}

}  // namespace
}  // namespace ignis
