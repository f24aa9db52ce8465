// nn::Module: registration order and dotted names, state-dict keys (the expected lists were
// written from PyTorch's output for the same architecture), load_state_dict round trips and
// errors, dtype moves, modes, zero_grad, containers and the printed summary.
#include <memory>
#include <sstream>
#include <type_traits>

#include "support/test_support.h"

namespace ignis {
namespace {

using testing::values_of;

struct Block : nn::Module {
  nn::Linear fc1{this, "fc1", 4, 8};
  nn::Linear fc2{this, "fc2", 8, 4, /*bias=*/false};
  Tensor running_mean = zeros({4});
  Tensor num_batches_tracked = zeros({}, kInt64);
  Block(Module* parent, std::string name) : Module(parent, std::move(name)) {
    register_buffer("running_mean", &running_mean);
    register_buffer("num_batches_tracked", &num_batches_tracked);
  }
};

struct Net : nn::Module {
  nn::Linear stem{this, "stem", 3, 4};
  Block block{this, "block"};
  nn::Sequential head{this, "head", std::make_unique<nn::Linear>(4, 2),
                      std::make_unique<nn::ReLU>(), std::make_unique<nn::Dropout>(0.25),
                      std::make_unique<nn::GELU>("tanh")};
  Tensor scale = ones({1});
  Net() { register_parameter("scale", &scale); }
};

// The program of the design notes, minus the training loop (backward is not there yet).
struct SimpleModel : nn::Module {
  nn::Linear fc1{this, "fc1", 10, 512};
  nn::Linear fc2{this, "fc2", 512, 10};
  Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
};

std::vector<std::string> names_of(const auto& named) {
  std::vector<std::string> out;
  for (const auto& [n, x] : named) out.push_back(n);
  return out;
}

static_assert(!std::is_copy_constructible_v<nn::Linear> && !std::is_move_constructible_v<Net> &&
              !std::is_copy_assignable_v<nn::Module> && !std::is_move_assignable_v<nn::Module>);

TEST(Module, NamesFollowRegistrationOrder) {
  Net net;
  EXPECT_EQ(names_of(net.named_parameters()),
            (std::vector<std::string>{"scale", "stem.weight", "stem.bias", "block.fc1.weight",
                                      "block.fc1.bias", "block.fc2.weight", "head.0.weight",
                                      "head.0.bias"}));
  EXPECT_EQ(names_of(net.named_buffers()),
            (std::vector<std::string>{"block.running_mean", "block.num_batches_tracked"}));
  EXPECT_EQ(names_of(net.named_modules()),
            (std::vector<std::string>{"", "stem", "block", "block.fc1", "block.fc2", "head",
                                      "head.0", "head.1", "head.2", "head.3"}));
  EXPECT_EQ(names_of(net.named_children()), (std::vector<std::string>{"stem", "block", "head"}));
  EXPECT_EQ(net.block.fc1.name(), "fc1");
  EXPECT_EQ(net.block.fc1.parent(), &net.block);
  EXPECT_EQ(names_of(net.block.named_parameters(false)), std::vector<std::string>{});
  // Handles share data with the members.
  EXPECT_TRUE(net.parameters()[1].is_same_storage(net.stem.weight));
  // 1 + (3*4 + 4) + (4*8 + 8) + 8*4 + (4*2 + 2)
  EXPECT_EQ(net.num_parameters(), 1 + 16 + 40 + 32 + 10);
  for (const auto& p : net.parameters()) EXPECT_TRUE(p.requires_grad() && p.is_leaf());
}

TEST(Module, StateDictKeysMatchPyTorch) {
  Net net;
  EXPECT_EQ(net.state_dict().keys(),
            (std::vector<std::string>{"scale", "stem.weight", "stem.bias", "block.running_mean",
                                      "block.num_batches_tracked", "block.fc1.weight",
                                      "block.fc1.bias", "block.fc2.weight", "head.0.weight",
                                      "head.0.bias"}));
  EXPECT_EQ(net.state_dict().at("block.num_batches_tracked").dtype(), kInt64);
  SimpleModel m;
  EXPECT_EQ(m.state_dict().keys(),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(m.num_parameters(), 10 * 512 + 512 + 512 * 10 + 10);
  EXPECT_EQ(m(randn({64, 10})).sizes(), (Shape{64, 10}));
}

TEST(Module, LoadStateDictRoundTrip) {
  Net a, b;
  a.block.running_mean.copy_(tensor<float>({1, 2, 3, 4}));
  a.block.num_batches_tracked.fill_(7);
  auto result = b.load_state_dict(a.state_dict());
  EXPECT_TRUE(result.missing_keys.empty() && result.unexpected_keys.empty());
  for (const auto& [key, t] : a.state_dict())
    EXPECT_EQ(values_of(b.state_dict().at(key)), values_of(t)) << key;
  // Values were copied into b's own tensors, not shared.
  EXPECT_FALSE(b.stem.weight.is_same_storage(a.stem.weight));
  {
    NoGradGuard no_grad;  // parameters are leaves that require grad
    a.stem.weight.fill_(0.5);
  }
  EXPECT_NE(values_of(b.stem.weight)[0], 0.5);
  // A float64 checkpoint loads into float32 tensors (converted).
  nn::StateDict sd = a.state_dict();
  sd.insert("scale", full({1}, 3.0, kFloat64));
  b.load_state_dict(sd);
  EXPECT_EQ(b.scale.dtype(), kFloat32);
  EXPECT_EQ(values_of(b.scale), std::vector<double>{3.0});
}

TEST(Module, LoadStateDictReportsEveryProblemAtOnce) {
  Net a, b;
  const auto before = values_of(b.stem.weight);
  nn::StateDict sd = a.state_dict();
  sd.erase("stem.bias");
  sd.erase("head.0.bias");
  sd.insert("extra.weight", zeros({2}));
  sd.insert("block.fc1.weight", zeros({8, 5}));
  sd.insert("scale", zeros({2}));
  EXPECT_THROW_MSG(b.load_state_dict(sd), ValueError,
                   "[load_state_dict] missing keys: stem.bias, head.0.bias; unexpected keys: "
                   "extra.weight; shape mismatch for scale: checkpoint [2], model [1]; shape "
                   "mismatch for block.fc1.weight: checkpoint [8, 5], model [8, 4]");
  EXPECT_EQ(values_of(b.stem.weight), before);  // nothing copied when anything is wrong
  // Non-strict: missing and unexpected keys are returned, shape mismatches still throw.
  sd.insert("block.fc1.weight", a.block.fc1.weight);
  sd.insert("scale", a.scale);
  auto r = b.load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"stem.bias", "head.0.bias"}));
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"extra.weight"});
  EXPECT_EQ(values_of(b.stem.weight), values_of(a.stem.weight));
  sd.insert("stem.weight", zeros({4, 4}));
  EXPECT_THROW_MSG(b.load_state_dict(sd, false), ValueError,
                   "shape mismatch for stem.weight: checkpoint [4, 4], model [4, 3]");
}

TEST(Module, ToDTypeKeepsRequiresGradAndIntegerBuffers) {
  Net net;
  const auto w = values_of(net.stem.weight);
  net.stem.weight.mutable_grad() = ones({4, 3});
  net.to(kFloat64);
  for (const auto& [n, p] : net.named_parameters()) {
    EXPECT_EQ(p.dtype(), kFloat64) << n;
    EXPECT_TRUE(p.requires_grad() && p.is_leaf()) << n;
  }
  EXPECT_EQ(net.stem.weight.dtype(), kFloat64);  // the member itself was replaced
  EXPECT_EQ(values_of(net.stem.weight), w);
  EXPECT_EQ(net.stem.weight.grad().dtype(), kFloat64);
  EXPECT_EQ(net.block.running_mean.dtype(), kFloat64);
  EXPECT_EQ(net.block.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(net.state_dict().at("stem.weight").dtype(), kFloat64);
  EXPECT_THROW_MSG(net.to(kInt32), DTypeError, "[Module.to] expects a floating dtype");
  net.to(Device::cpu());  // same device: nothing to move, still float64
  EXPECT_EQ(net.stem.weight.dtype(), kFloat64);
}

TEST(Module, TrainEvalPropagate) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  for (auto& [n, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << n;
  net.block.train();
  EXPECT_TRUE(net.block.fc1.is_training());
  EXPECT_FALSE(net.stem.is_training());
  net.train();
  for (auto& [n, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << n;
}

TEST(Module, ZeroGrad) {
  Net net;
  for (auto p : net.parameters()) p.mutable_grad() = ones_like(p);
  net.zero_grad(/*set_to_none=*/false);
  for (const auto& p : net.parameters())
    EXPECT_EQ(values_of(p.grad()), std::vector<double>(size_t(p.numel()), 0.0));
  net.zero_grad();
  for (const auto& p : net.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, Summary) {
  Net net;
  EXPECT_EQ(net.repr(),
            "Net(\n"
            "  (stem): Linear(in_features=3, out_features=4, bias=True)\n"
            "  (block): Block(\n"
            "    (fc1): Linear(in_features=4, out_features=8, bias=True)\n"
            "    (fc2): Linear(in_features=8, out_features=4, bias=False)\n"
            "  )\n"
            "  (head): Sequential(\n"
            "    (0): Linear(in_features=4, out_features=2, bias=True)\n"
            "    (1): ReLU()\n"
            "    (2): Dropout(p=0.25, inplace=False)\n"
            "    (3): GELU(approximate='tanh')\n"
            "  )\n"
            ")");
  std::ostringstream os;
  os << net;
  const std::string s = os.str();
  EXPECT_EQ(s.rfind(net.repr(), 0), 0u);
  EXPECT_NE(s.find("block.fc1.weight  [8, 4]"), std::string::npos) << s;
  EXPECT_NE(s.find("Total parameters: 99 (trainable: 99)"), std::string::npos) << s;
  EXPECT_EQ(nn::Embedding(10, 3, 2).repr(), "Embedding(10, 3, padding_idx=2)");
  EXPECT_EQ(nn::LeakyReLU(0.2).repr(), "LeakyReLU(negative_slope=0.2)");
  EXPECT_EQ(nn::Softmax(1).repr(), "Softmax(dim=1)");
  EXPECT_EQ(nn::Flatten().repr(), "Flatten(start_dim=1, end_dim=-1)");
}

TEST(Module, RegistrationErrorsAndLifetimes) {
  nn::Module root;
  EXPECT_THROW_MSG(nn::Linear(&root, "a.b", 1, 1), ValueError, "invalid name 'a.b'");
  {
    nn::Linear l(&root, "tmp", 2, 2);
    EXPECT_EQ(root.children().size(), 1u);
    EXPECT_THROW_MSG(nn::Linear(&root, "tmp", 1, 1), ValueError, "'tmp' is already registered");
  }
  EXPECT_TRUE(root.children().empty());  // the child unregistered itself
  EXPECT_THROW_MSG(root.forward(zeros({1})), NotImplementedError,
                   "has no single-input forward");
  nn::Sequential seq;
  auto lin = std::make_unique<nn::Linear>(1, 1);
  nn::Linear other(&root, "other", 1, 1);
  EXPECT_THROW_MSG(seq.push_back(std::unique_ptr<nn::Module>(&other)).name(), ValueError,
                   "already belongs to another module");
}

TEST(Module, SequentialChainsAndIndexes) {
  manual_seed(3);
  nn::Sequential seq{std::make_unique<nn::Linear>(3, 5), std::make_unique<nn::Tanh>()};
  auto& last = seq.emplace_back<nn::Linear>(5, 2);
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(&seq.at<nn::Linear>(-1), &last);
  EXPECT_THROW_MSG(seq.at<nn::Linear>(1), ValueError, "module 1 is a Tanh");
  EXPECT_THROW_MSG(seq[3], IndexError, "index 3 is out of range for 3 modules");
  Tensor x = randn({4, 3});
  auto& first = seq.at<nn::Linear>(0);
  Tensor expected = last(tanh(first(x)));
  EXPECT_EQ(values_of(seq(x)), values_of(expected));
  EXPECT_EQ(seq.state_dict().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  nn::Sequential empty;
  EXPECT_EQ(values_of(empty(x)), values_of(x));
  nn::ModuleList list{std::make_unique<nn::ReLU>()};
  EXPECT_THROW_MSG(list(x), NotImplementedError, "[ModuleList] has no single-input forward");
}

}  // namespace
}  // namespace ignis
