// Channels-last end to end: the public memory-format API (Tensor::to/contiguous/clone,
// factories, Module::to with an optimizer built before), gradients in the leaf's layout, the
// conv2d layout rule, and ResNet-18 forward + backward in channels-last: every activation
// saved by the graph and every 4-D gradient must be channels-last, and the values must equal
// the contiguous run's. (Strides and format answers against PyTorch itself:
// tests/reference/test_memory_format_reference.cpp.)
#include <unordered_set>

#include "autograd/node.h"
#include "core/shape.h"
#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace {
constexpr MemoryFormat kCL = MemoryFormat::channels_last;

/// Uniform values in [lo, hi) as float32 (random_tensor gives float64).
Tensor rand32(const Shape& s, double lo, double hi, uint64_t seed) {
  return random_tensor(s, lo, hi, seed).to(kFloat32);
}

/// An NHWC tensor with the logical values of a random NCHW one, built without the API under test.
Tensor nhwc_random(const Shape& s, uint64_t seed) {
  Tensor base = rand32({s[0], s[2], s[3], s[1]}, -1, 1, seed);  // [N, H, W, C] contiguous
  return base.permute({0, 3, 1, 2});
}
}  // namespace

TEST(ChannelsLast, ConversionsKeepValuesAndGiveNhwcStrides) {
  const Tensor x = rand32({2, 3, 4, 5}, -1, 1, 1);
  const Tensor c = x.to(kCL);
  EXPECT_EQ(c.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_TRUE(c.is_contiguous(kCL));
  EXPECT_FALSE(c.is_contiguous());
  EXPECT_EQ(c.suggest_memory_format(), kCL);
  EXPECT_EQ(x.suggest_memory_format(), MemoryFormat::contiguous);
  EXPECT_TRUE(all_close(c, values_of(x), 0, 0));
  EXPECT_EQ(c.to(kCL).impl(), c.impl());  // already channels-last: no copy
  EXPECT_EQ(c.contiguous(kCL).impl(), c.impl());
  const Tensor back = c.contiguous();
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_TRUE(all_close(back, values_of(x), 0, 0));
  // dtype conversions and clone keep the layout (preserve), as in PyTorch.
  EXPECT_EQ(c.to(kFloat64).strides(), c.strides());
  EXPECT_EQ(c.clone().strides(), c.strides());
  EXPECT_EQ(c.to(kFloat64, false, MemoryFormat::contiguous).strides(), (Shape{60, 20, 5, 1}));
  EXPECT_EQ(c.to(Device::cpu(), kFloat64, false, false, kCL).strides(), c.strides());
  EXPECT_TRUE(all_close(c.to(kFloat64), values_of(x), 0, 0));
}

TEST(ChannelsLast, FactoriesTakeAMemoryFormat) {
  EXPECT_EQ(empty({2, 3, 4, 5}, kCL).strides(), (Shape{60, 1, 15, 3}));
  const Tensor z = zeros({2, 3, 4, 5}, {kFloat64, kCL});
  EXPECT_EQ(z.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_EQ(z.dtype(), kFloat64);
  EXPECT_TRUE(all_close(z, std::vector<double>(120, 0.0), 0, 0));
  const Tensor o = ones({1, 2, 3, 3}, {Device::cpu(), kCL});
  EXPECT_TRUE(o.is_contiguous(kCL));
  EXPECT_TRUE(all_close(o, std::vector<double>(18, 1.0), 0, 0));
  const Tensor r = randn({2, 3, 4, 5}, kCL);
  manual_seed(0);
  const Tensor r1 = randn({2, 3, 4, 5}, kCL);
  manual_seed(0);
  const Tensor r2 = randn({2, 3, 4, 5});
  EXPECT_TRUE(r1.is_contiguous(kCL));
  EXPECT_TRUE(all_close(r1, values_of(r2), 0, 0)) << "the same logical values in either layout";
  const Tensor like = empty_like(nhwc_random({2, 3, 4, 5}, 2));
  EXPECT_EQ(like.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_EQ(zeros_like(r, MemoryFormat::contiguous).strides(), (Shape{60, 20, 5, 1}));
  EXPECT_EQ(empty_like(rand32({2, 3, 4, 5}, 0, 1, 3), kCL).strides(), (Shape{60, 1, 15, 3}));
}

TEST(ChannelsLast, BadFormatsAreRefusedNamingTheOp) {
  const Tensor x3 = zeros({2, 3, 4});
  EXPECT_THROW_MSG(x3.to(kCL), ValueError, "[to] memory format channels_last needs a 4-D tensor");
  EXPECT_THROW_MSG(x3.contiguous(kCL), ValueError, "[contiguous] memory format channels_last needs a 4-D");
  EXPECT_THROW_MSG(empty({2, 3}, kCL), ValueError, "[empty] memory format channels_last needs a 4-D");
  EXPECT_THROW_MSG(empty({2, 3, 4, 5}, MemoryFormat::preserve), ValueError, "[empty] memory format preserve");
  EXPECT_THROW_MSG(zeros({2, 3, 4, 5}).contiguous(MemoryFormat::preserve), ValueError,
                   "[contiguous] memory format preserve is not supported");
  EXPECT_FALSE(x3.is_contiguous(kCL));
}

TEST(ChannelsLast, ToIsDifferentiableAndGradientsFollowTheLeafLayout) {
  // A contiguous leaf used through a channels-last copy gets a contiguous gradient; a
  // channels-last leaf gets a channels-last one (PyTorch's gradient layout contract).
  Tensor x = rand32({2, 3, 4, 5}, -1, 1, 4).requires_grad_();
  Tensor w = rand32({2, 3, 4, 5}, -1, 1, 5);
  (x.to(kCL) * w).sum().backward();
  EXPECT_TRUE(x.grad().is_contiguous());
  EXPECT_TRUE(all_close(x.grad(), values_of(w), 0, 0));
  Tensor y = nhwc_random({2, 3, 4, 5}, 6).requires_grad_();
  (y * w).sum().backward();  // the gradient arrives in w's (contiguous) layout
  EXPECT_TRUE(y.grad().is_contiguous(kCL));
  EXPECT_FALSE(y.grad().is_contiguous());
  EXPECT_TRUE(all_close(y.grad(), values_of(w), 0, 0));
  (y * w).sum().backward();  // accumulation keeps it
  EXPECT_TRUE(y.grad().is_contiguous(kCL));
  EXPECT_TRUE(all_close(y.grad(), values_of(w * 2), 0, 0));
}

TEST(ChannelsLast, ModuleToConvertsInPlaceForOptimizersBuiltBefore) {
  manual_seed(7);
  nn::Conv2d conv(nn::Conv2dConfig{.in_channels = 3, .out_channels = 8, .kernel_size = {3, 3}});
  nn::BatchNorm2d bn(8);
  // Momentum: the fused update runs over weight, gradient and buffer in their common
  // channels-last layout (the first step's buffer is the gradient itself).
  optim::SGD opt(conv.parameters(), {.lr = 0.1, .momentum = 0.9});
  const Tensor weight_handle = conv.weight;
  const std::vector<double> before = values_of(conv.weight);
  conv.to(kCL);
  bn.to(kCL);
  EXPECT_EQ(conv.weight.impl(), weight_handle.impl()) << "the parameter keeps its identity";
  EXPECT_TRUE(conv.weight.is_contiguous(kCL));
  EXPECT_FALSE(conv.weight.is_contiguous());
  EXPECT_TRUE(conv.weight.requires_grad());
  EXPECT_TRUE(all_close(conv.weight, before, 0, 0));
  EXPECT_TRUE(conv.bias.is_contiguous()) << "1-D tensors are left alone";
  const Tensor x = rand32({2, 3, 6, 6}, -1, 1, 8).to(kCL);
  conv(x).sum().backward();
  EXPECT_TRUE(conv.weight.grad().is_contiguous(kCL));
  // The optimizer holds the same TensorImpl, so its step moves the model's weight.
  const std::vector<double> g = values_of(conv.weight.grad());
  opt.step();
  std::vector<double> want(before.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = before[i] - 0.1 * g[i];
  EXPECT_TRUE(all_close(conv.weight, want, 1e-6, 1e-7));
  EXPECT_TRUE(conv.weight.is_contiguous(kCL));
  // Second step, same gradient: buffer = 0.9 g + g, so the weight moves by 0.19 g more.
  opt.step();
  for (size_t i = 0; i < want.size(); ++i) want[i] -= 0.1 * 1.9 * g[i];
  EXPECT_TRUE(all_close(conv.weight, want, 1e-6, 1e-7));
  conv.to(MemoryFormat::contiguous);
  EXPECT_TRUE(conv.weight.is_contiguous());
  EXPECT_EQ(conv.weight.impl(), weight_handle.impl());
}

TEST(ChannelsLast, ConvLayoutFollowsTheUsersChoiceThenTheBackend) {
  const Tensor w8 = rand32({8, 3, 3, 3}, -1, 1, 9);
  const Tensor x = rand32({2, 3, 6, 6}, -1, 1, 10);
  // Narrow conv, contiguous operands: contiguous result (the CPU prefers NHWC from 32 up).
  EXPECT_TRUE(conv2d(x, w8).is_contiguous());
  // Either operand channels-last gives a channels-last result (PyTorch's rule).
  const Tensor y_x = conv2d(x.to(kCL), w8), y_w = conv2d(x, w8.to(kCL));
  EXPECT_TRUE(y_x.is_contiguous(kCL) && !y_x.is_contiguous());
  EXPECT_TRUE(y_w.is_contiguous(kCL) && !y_w.is_contiguous());
  const std::vector<double> ref = values_of(conv2d(x.to(kFloat64), w8.to(kFloat64)));
  for (const Tensor& y : {y_x, y_w}) EXPECT_TRUE(all_close(y, ref, 1e-5, 1e-6));
  // A 1-channel input in channels-last strides (ambiguous: also NCHW-contiguous) with a
  // converted weight, as the small CNN's first layer after to(channels_last).
  const Tensor x1 = rand32({2, 1, 6, 6}, -1, 1, 11), w1 = rand32({8, 1, 3, 3}, -1, 1, 12);
  const Tensor y1 = conv2d(x1.to(kCL), w1.to(kCL));
  EXPECT_TRUE(y1.is_contiguous(kCL) && !y1.is_contiguous());
  EXPECT_TRUE(all_close(y1, values_of(conv2d(x1.to(kFloat64), w1.to(kFloat64))), 1e-5, 1e-6));
  // The CPU backend's preference: a wide float32 convolution of contiguous operands runs
  // NHWC (Note [Preferred conv layout]); float64 is not on its list, but a user's
  // channels-last input always gets channels-last.
  const Tensor wide = conv2d(x, rand32({32, 3, 3, 3}, -1, 1, 13));
  EXPECT_TRUE(wide.is_contiguous(kCL) && !wide.is_contiguous());
  EXPECT_TRUE(conv2d(x.to(kFloat64), rand32({32, 3, 3, 3}, -1, 1, 13).to(kFloat64)).is_contiguous());
  EXPECT_TRUE(conv2d(x.to(kFloat64).to(kCL), w8.to(kFloat64)).is_contiguous(kCL));
  // Grouped: a wide float32 depthwise convolution keeps NCHW (the direct kernels run either
  // layout), a bf16 one runs NHWC (oneDNN's kernels); one with 2 groups stays NCHW.
  const Tensor x32 = rand32({2, 32, 6, 6}, -1, 1, 14), w32 = rand32({32, 1, 3, 3}, -1, 1, 15);
  EXPECT_TRUE(conv2d(x32, w32, Tensor(), {.groups = 32}).is_contiguous());
  const Tensor depthwise = conv2d(x32.to(kBFloat16), w32.to(kBFloat16), Tensor(), {.groups = 32});
  EXPECT_TRUE(depthwise.is_contiguous(kCL) && !depthwise.is_contiguous());
  EXPECT_TRUE(conv2d(x32, rand32({32, 16, 3, 3}, -1, 1, 16), Tensor(), {.groups = 2}).is_contiguous());
}

TEST(ChannelsLast, ChannelsLastWeightsGiveTheSameConvolutionAndGradients) {
  // oneDNN reads a channels-last weight through its strides (split per group) and writes the
  // weight gradient back the same way; float64 on contiguous tensors is the reference.
  struct Case {
    Shape x, w;
    Conv2dOptions o;
  };
  const Case cases[] = {
      {{2, 8, 7, 6}, {32, 8, 3, 3}, {.padding = {1, 1}}},
      {{2, 4, 7, 7}, {6, 2, 3, 3}, {.stride = {2, 2}, .padding = {1, 1}, .groups = 2}},
      {{2, 4, 6, 6}, {4, 1, 3, 3}, {.padding = {1, 1}, .groups = 4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(detail::shape_str(c.w) + " groups " + std::to_string(c.o.groups));
    const Tensor x0 = rand32(c.x, -1, 1, 30), w0 = rand32(c.w, -0.5, 0.5, 31);
    std::vector<std::vector<double>> got[2];
    for (int ref = 0; ref < 2; ++ref) {
      Tensor x = (ref ? x0.to(kFloat64) : x0.to(kCL)).detach().requires_grad_();
      Tensor w = (ref ? w0.to(kFloat64) : w0.to(kCL)).detach().requires_grad_();
      const Tensor y = conv2d(x, w, Tensor(), c.o);
      (y * random_tensor(y.sizes(), -1, 1, 32).to(y.dtype())).sum().backward();
      if (!ref) EXPECT_TRUE(w.grad().is_contiguous(kCL) && y.is_contiguous(kCL));
      got[ref] = {values_of(y), values_of(x.grad()), values_of(w.grad())};
    }
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(all_close(got[0][i], got[1][i], 1e-4, 1e-5)) << i;
  }
}

// ---- ResNet-18 -------------------------------------------------------------------------------
namespace {

/// Every FunctionNode reachable from root (the graph of one forward pass).
std::vector<detail::FunctionNode*> graph_nodes(const Tensor& root) {
  std::vector<detail::FunctionNode*> out;
  std::unordered_set<detail::Node*> seen;
  std::vector<detail::Node*> todo{detail::autograd_meta_if(root)->grad_fn.get()};
  while (!todo.empty()) {
    detail::Node* n = todo.back();
    todo.pop_back();
    if (!n || !seen.insert(n).second) continue;
    if (auto* f = dynamic_cast<detail::FunctionNode*>(n)) out.push_back(f);
    for (const detail::Edge& e : n->next_edges) todo.push_back(e.fn.get());
  }
  return out;
}

struct ResNetRun {
  std::vector<double> logits;
  std::vector<std::vector<double>> grads;  // the parameters', in order
  std::vector<double> input_grad;
  int64_t activations_checked = 0, gradients_checked = 0;
  std::vector<std::string> not_channels_last;  // "op: what" for every 4-D tensor that is not
};

ResNetRun run_resnet18(bool channels_last) {
  manual_seed(21);
  auto net = models::resnet18({.num_classes = 5});  // the ImageNet stem: max pool included
  Tensor x = rand32({2, 3, 64, 64}, -1, 1, 22);
  if (channels_last) {
    net->to(kCL);
    x = x.to(kCL);
  }
  x.requires_grad_();
  const Tensor labels = tensor(std::vector<int64_t>{1, 4});
  const Tensor logits = (*net)(x);
  const Tensor loss = nn::functional::cross_entropy(logits, labels);
  ResNetRun r;
  auto check = [&r](const Tensor& t, const std::string& what) {
    if (!t.defined() || t.dim() != 4) return false;
    if (!t.is_contiguous(kCL)) r.not_channels_last.push_back(what);
    return true;
  };
  for (detail::FunctionNode* n : graph_nodes(loss)) {
    // Saved tensors are the activations backward reads: conv and batch-norm inputs, ReLU
    // outputs, pooling inputs and indices; every other 4-D result feeds one of them.
    for (const detail::SavedTensor& s : n->saved)
      r.activations_checked += check(s.data, std::string(n->op) + " saved tensor");
    // The gradient arriving at each output, checked as backward runs.
    if (n->pre_hooks.size() < n->num_outputs) n->pre_hooks.resize(n->num_outputs);
    const std::string op = n->op;
    for (auto& hooks : n->pre_hooks)
      hooks.emplace_back(-1, [&r, check, op](const Tensor& g) {
        r.gradients_checked += check(g, op + " output gradient");
        return Tensor();
      });
  }
  loss.backward();
  r.logits = values_of(logits);
  for (const auto& [name, p] : net->named_parameters()) {
    r.gradients_checked += check(p.grad(), name + ".grad");
    r.grads.push_back(values_of(p.grad()));
  }
  r.gradients_checked += check(x.grad(), "input.grad");
  r.input_grad = values_of(x.grad());
  return r;
}

}  // namespace

TEST(ChannelsLast, ResNet18StaysChannelsLastThroughForwardAndBackward) {
  const ResNetRun cl = run_resnet18(true);
  EXPECT_TRUE(cl.not_channels_last.empty())
      << cl.not_channels_last.size() << " tensors are not channels-last, the first: "
      << cl.not_channels_last.front();
  // conv (20) + batch norm (20) inputs, ReLU outputs (17), pools: far more than 50 each way.
  EXPECT_GT(cl.activations_checked, 50);
  EXPECT_GT(cl.gradients_checked, 60);
  const ResNetRun ref = run_resnet18(false);
  EXPECT_TRUE(all_close(cl.logits, ref.logits, 1e-5, 1e-5)) << "logits";
  EXPECT_TRUE(all_close(cl.input_grad, ref.input_grad, 1e-5, 1e-5)) << "input gradient";
  ASSERT_EQ(cl.grads.size(), ref.grads.size());
  for (size_t i = 0; i < cl.grads.size(); ++i)
    EXPECT_TRUE(all_close(cl.grads[i], ref.grads[i], 1e-5, 1e-5)) << "parameter " << i;
}
