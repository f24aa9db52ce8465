// Convolution (cuDNN), batch norm (also with its fused ReLU / residual epilogues), pooling, the fused cross-entropy and the fused SGD update
// on the GPU against the CPU: the same inputs on both devices, the outputs and every input
// gradient (autograd with a random upstream gradient) compared. float64 agrees to rounding
// (the CPU's own tests check it against float64 loops and PyTorch); float32 to ~1e-5
// relative (cuDNN sums in another order; TF32 is off); bfloat16/float16 inputs are compared
// at ~1e-2 (batch norm keeps them 16-bit with float32 parameters on both devices).
#include <functional>

#include "cuda/cuda_test_util.h"

namespace ignis {
namespace {
using testing::DeterministicConvolutions;
using testing::equals_cpu;
using testing::kGpu;
using testing::matches_cpu;
using testing::random_tensor;

/// A copy of t (float64 values) in dtype on device, channels-last when asked, as a leaf.
Tensor leaf(const Tensor& t, Device d, DType dtype, bool channels_last = false) {
  Tensor r = t.to(d, dtype, false, /*copy=*/true);
  if (channels_last) r = r.contiguous(MemoryFormat::channels_last);
  return r.requires_grad_();
}

/// fn's output on device d and the gradients of sum(output * upstream) for every input.
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
std::vector<Tensor> run_on(
    Device d,
    DType dtype,
    const Fn& fn,
    const std::vector<Tensor>& inputs,
    bool channels_last,
    uint64_t seed) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < inputs.size(); ++i)
    xs.push_back(leaf(inputs[i], d, dtype, channels_last && i == 0 && inputs[i].dim() == 4));
  const Tensor y = fn(xs);
  const Tensor up = random_tensor(y.sizes(), -1, 1, seed).to(d, y.dtype());
  (y * up).sum().backward();
  std::vector<Tensor> r{y.detach()};
  for (const Tensor& x : xs) r.push_back(x.grad());
  return r;
}

/// Output and input gradients of fn on the GPU against the CPU's.
void expect_like_cpu(
    const std::string& what,
    const Fn& fn,
    const std::vector<Tensor>& inputs,
    DType dtype,
    bool channels_last = false) {
  const double tol = dtype == kFloat64 ? 1e-10 : dtype == kFloat32 ? 2e-5 : 2e-2;
  const auto cpu = run_on(Device::cpu(), dtype, fn, inputs, channels_last, 99);
  const auto gpu = run_on(kGpu, dtype, fn, inputs, channels_last, 99);
  const std::string tag = what + " " + dtype_name(dtype) + (channels_last ? " channels-last" : "");
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (!cpu[i].defined()) {
      EXPECT_FALSE(gpu[i].defined()) << tag << " #" << i;
      continue;
    }
    EXPECT_TRUE(matches_cpu(gpu[i], cpu[i], tol, tol))
        << tag << (i == 0 ? " output" : " gradient of input " + std::to_string(i - 1));
  }
}

TEST(CudaNn, Conv2dForwardAndBackwardMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  struct Case {
    const char* name;
    Shape x, w;
    Conv2dOptions o;
    bool bias;
  };
  const Case cases[] = {
      {"3x3 pad 1", {2, 3, 9, 8}, {5, 3, 3, 3}, {.padding = {1, 1}}, true},
      {"stride 2, no bias",
       {2, 4, 11, 10},
       {6, 4, 3, 3},
       {.stride = {2, 2}, .padding = {1, 1}},
       false},
      {"dilation 2, asymmetric kernel",
       {1, 3, 12, 9},
       {4, 3, 3, 2},
       {.padding = {2, 1}, .dilation = {2, 2}},
       true},
      {"groups 2", {2, 4, 7, 7}, {6, 2, 3, 3}, {.padding = {1, 1}, .groups = 2}, true},
      {"depthwise",
       {2, 4, 6, 6},
       {4, 1, 3, 3},
       {.stride = {2, 1}, .padding = {1, 0}, .groups = 4},
       false},
      {"1x1 stride 2", {3, 8, 8, 8}, {16, 8, 1, 1}, {.stride = {2, 2}}, false},
      // "same" with an even kernel pads one more row/column at the end than at the start.
      {"same, even kernel", {2, 3, 7, 6}, {4, 3, 4, 2}, {.padding_mode = "same"}, true},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> in{random_tensor(c.x, -1, 1, 1), random_tensor(c.w, -0.5, 0.5, 2)};
    if (c.bias) in.push_back(random_tensor({c.w[0]}, -0.5, 0.5, 3));
    const Fn fn = [&](const std::vector<Tensor>& v) {
      return conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), c.o);
    };
    for (DType t : {kFloat32, kFloat64})
      for (bool cl : {false, true}) expect_like_cpu(c.name, fn, in, t, cl);
  }
  // 16-bit inputs: cuDNN computes in bf16/fp16 on tensor cores with float accumulation, the
  // CPU in bf16 through oneDNN (also float accumulation) or, for fp16, in float32: each rounds
  // once, so they agree to about an ulp. Every case above, both layouts (bias, stride, groups,
  // dilation and the asymmetric "same" padding included).
  for (const Case& c : cases) {
    std::vector<Tensor> in{random_tensor(c.x, -1, 1, 4), random_tensor(c.w, -0.5, 0.5, 5)};
    if (c.bias) in.push_back(random_tensor({c.w[0]}, -0.5, 0.5, 6));
    const Fn fn = [&](const std::vector<Tensor>& v) {
      return conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), c.o);
    };
    for (DType t : {kBFloat16, kFloat16})
      for (bool cl : {false, true}) expect_like_cpu(c.name, fn, in, t, cl);
  }
}

// conv2d + ReLU as one node (nn::functional::conv2d with Activation::ReLU): on the CPU oneDNN's
// post-op, on CUDA the convolution and an in-place ReLU; the output and every gradient (the
// mask from the saved output) agree, in both layouts and with 32 channels (the CPU's
// channels-last choice).
TEST(CudaNn, Conv2dReluMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const Fn fn = [](const std::vector<Tensor>& v) {
    return nn::functional::conv2d(v[0], v[1], v[2], {.padding = {1, 1}},
                                  nn::functional::Activation::ReLU);
  };
  for (int64_t out : {5, 32}) {
    const std::vector<Tensor> in{random_tensor({2, 3, 9, 8}, -1, 1, 7),
                                 random_tensor({out, 3, 3, 3}, -0.5, 0.5, 8),
                                 random_tensor({out}, -0.5, 0.5, 9)};
    for (DType t : {kFloat32, kFloat64})
      for (bool cl : {false, true}) expect_like_cpu("conv2d_relu", fn, in, t, cl);
  }
}

TEST(CudaNn, Conv2dInBenchmarkModeMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  // The timed choice may differ from the heuristics' and runs on the call's own tensors
  // first (cudnnFind*AlgorithmEx writes the outputs); the results must not change.
  const testing::ScopedSwitch benchmark(cuda::set_cudnn_benchmark);
  const std::vector<Tensor> in{
      random_tensor({4, 8, 12, 12}, -1, 1, 40),
      random_tensor({16, 8, 3, 3}, -0.5, 0.5, 41),
      random_tensor({16}, -0.5, 0.5, 42)};
  const Fn fn = [](const std::vector<Tensor>& v) {
    return conv2d(v[0], v[1], v[2], {.stride = {2, 2}, .padding = {1, 1}});
  };
  for (int repeat = 0; repeat < 2; ++repeat)  // found, then from the cache
    for (bool cl : {false, true}) expect_like_cpu("benchmark mode", fn, in, kFloat32, cl);
}

TEST(CudaNn, Conv2dDeterministicModeRepeatsBitForBit) {
  IGNIS_REQUIRE_CUDA();
  // The weight gradient over many positions is where cuDNN's fast algorithms may add with
  // atomics; in deterministic mode two runs give the same bits. A call made before the mode
  // was on must not lend its (possibly non-deterministic) choice: the mode is in the key.
  const Tensor x0 = random_tensor({32, 64, 16, 16}, -1, 1, 43);
  const Tensor w0 = random_tensor({64, 64, 3, 3}, -0.1, 0.1, 44);
  const Tensor up = random_tensor({32, 64, 16, 16}, -1, 1, 45);
  for (DType t : {kFloat32, kBFloat16})
    for (bool cl : {false, true}) {
      const auto run = [&](Device d) {
        Tensor x = x0.to(d, t), w = w0.to(d, t);
        if (cl) {
          x = x.contiguous(MemoryFormat::channels_last);
          w = w.contiguous(MemoryFormat::channels_last);
        }
        x.requires_grad_();
        w.requires_grad_();
        const Tensor y = conv2d(x, w, Tensor(), {.padding = {1, 1}});
        (y * up.to(d, t)).sum().backward();
        return std::vector<Tensor>{y.detach(), x.grad(), w.grad()};
      };
      (void)run(kGpu);
      const DeterministicConvolutions deterministic;
      if (cuda::is_built()) EXPECT_TRUE(cuda::cudnn_deterministic());  // (a no-op stub without)
      const auto a = run(kGpu), b = run(kGpu), cpu = run(Device::cpu());
      const char* names[] = {"output", "input gradient", "weight gradient"};
      for (size_t i = 0; i < 3; ++i) {
        const std::string what =
            std::string(dtype_name(t)) + (cl ? " channels-last " : " ") + names[i];
        EXPECT_TRUE(equals_cpu(a[i], b[i].cpu())) << what << ": two deterministic runs differ";
        const double tol = t == kFloat32 ? 1e-4 : 3e-2;
        EXPECT_TRUE(matches_cpu(a[i], cpu[i], tol, tol)) << what;
      }
    }
  EXPECT_FALSE(cuda::cudnn_deterministic());
}

TEST(CudaNn, ConvTranspose2dMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  // output_padding makes the adjoint convolution's end padding smaller than its start.
  const std::vector<Tensor> in{
      random_tensor({2, 4, 5, 6}, -1, 1, 6),
      random_tensor({4, 3, 3, 3}, -0.5, 0.5, 7),
      random_tensor({3}, -0.5, 0.5, 8)};
  for (const ConvTranspose2dOptions& o :
       {ConvTranspose2dOptions{.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}},
        ConvTranspose2dOptions{.stride = {1, 2}, .padding = {0, 1}}}) {
    const Fn fn = [&](const std::vector<Tensor>& v) {
      return conv_transpose2d(v[0], v[1], v[2], o);
    };
    // bf16 and fp16 run in their own dtype on cuDNN (see the conv2d test).
    for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16})
      for (bool cl : {false, true}) expect_like_cpu("conv_transpose2d", fn, in, t, cl);
  }
}

TEST(CudaNn, BatchNormTrainingEvalAndBackwardMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  for (DType t : {kFloat32, kFloat64}) {
    // {8, 3, 40, 40}: 12800 values per channel, reduced in several chunks of unequal size
    // and merged (the small shapes take one chunk). 48 and 100 channels: the channels-last
    // kernels work in tiles of 32 channels, so several tiles and a partial last one.
    for (const Shape& shape : {Shape{4, 3, 5, 6}, Shape{16, 5}, Shape{3, 4, 7},
                               Shape{8, 3, 40, 40}, Shape{4, 48, 6, 5}, Shape{2, 100, 4, 4}}) {
      for (bool cl : {false, true}) {
        if (cl && shape.size() != 4) continue;
        const int64_t C = shape[1];
        const Tensor rm0 = random_tensor({C}, -0.5, 0.5, 10),
                     rv0 = random_tensor({C}, 0.5, 1.5, 11);
        const std::vector<Tensor> in{
            random_tensor(shape, -2, 3, 12),
            random_tensor({C}, 0.5, 1.5, 13),
            random_tensor({C}, -0.5, 0.5, 14)};
        for (bool training : {true, false}) {
          // Running statistics per device, compared after the call (training updates them).
          Tensor rm_cpu = rm0.to(t), rv_cpu = rv0.to(t);
          Tensor rm_gpu = rm0.to(kGpu, t), rv_gpu = rv0.to(kGpu, t);
          const auto fn_with = [training](const Tensor* rm, const Tensor* rv) -> Fn {
            return [=](const std::vector<Tensor>& v) {
              return batch_norm(v[0], *rm, *rv, v[1], v[2], training, 0.2, 1e-4);
            };
          };
          const auto cpu = run_on(Device::cpu(), t, fn_with(&rm_cpu, &rv_cpu), in, cl, 15);
          const auto gpu = run_on(kGpu, t, fn_with(&rm_gpu, &rv_gpu), in, cl, 15);
          const double tol = t == kFloat64 ? 1e-10 : 2e-5;
          const std::string tag = std::string(dtype_name(t)) + (training ? " training" : " eval") +
                                  (cl ? " channels-last " : " ") + detail::shape_str(shape);
          for (size_t i = 0; i < cpu.size(); ++i)
            EXPECT_TRUE(matches_cpu(gpu[i], cpu[i], tol, tol)) << tag << " #" << i;
          EXPECT_TRUE(matches_cpu(rm_gpu, rm_cpu, tol, tol)) << tag << " running_mean";
          EXPECT_TRUE(matches_cpu(rv_gpu, rv_cpu, tol, tol)) << tag << " running_var";
        }
      }
    }
  }
  // Without affine parameters.
  const Fn plain = [](const std::vector<Tensor>& v) {
    return batch_norm(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
  };
  expect_like_cpu(
      "batch_norm without affine", plain, {random_tensor({6, 4, 3, 3}, -1, 1, 16)}, kFloat32, true);
  // 16-bit inputs and parameters: the parameters go to float32, the input stays 16-bit.
  const Fn affine = [](const std::vector<Tensor>& v) {
    return batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true);
  };
  const std::vector<Tensor> in16{
      random_tensor({6, 4, 3, 3}, -1, 1, 17),
      random_tensor({4}, 0.5, 1.5, 18),
      random_tensor({4}, -0.5, 0.5, 19)};
  expect_like_cpu("batch_norm", affine, in16, kBFloat16);
  expect_like_cpu("batch_norm", affine, in16, kFloat16);
}

TEST(CudaNn, BatchNormReluAndResidualMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  // {8, 3, 40, 40} takes several chunks per channel, {2, 100, 4, 4} several channel tiles;
  // the residual follows the input's layout. Epilogues: ReLU, residual add + ReLU, and GELU
  // (batch_norm_gelu, whose backward recomputes the normalised value from the input).
  enum class Epi { relu, add_relu, gelu };
  for (DType t : {kFloat32, kFloat64})
    for (const Shape& shape : {Shape{4, 3, 5, 6}, Shape{8, 3, 40, 40}, Shape{2, 100, 4, 4}})
      for (bool cl : {false, true})
        for (bool training : {true, false})
          for (Epi epi : {Epi::relu, Epi::add_relu, Epi::gelu}) {
            const bool residual = epi == Epi::add_relu;
            const int64_t C = shape[1];
            std::vector<Tensor> in{
                random_tensor(shape, -2, 3, 40),
                random_tensor({C}, 0.5, 1.5, 41),
                random_tensor({C}, -0.5, 0.5, 42)};
            if (residual) in.push_back(random_tensor(shape, -1, 1, 43));
            Tensor rm_cpu = random_tensor({C}, -0.5, 0.5, 44).to(t), rv_cpu = random_tensor({C}, 0.5, 1.5, 45).to(t);
            Tensor rm_gpu = rm_cpu.to(kGpu, t), rv_gpu = rv_cpu.to(kGpu, t);
            const auto fn_with = [=](const Tensor* rm, const Tensor* rv) -> Fn {
              return [=](const std::vector<Tensor>& v) {
                if (epi == Epi::gelu)
                  return batch_norm_gelu(v[0], *rm, *rv, v[1], v[2], training, 0.2, 1e-4);
                Tensor r;
                if (residual) r = cl ? v[3].contiguous(MemoryFormat::channels_last) : v[3];
                return batch_norm_relu(v[0], *rm, *rv, v[1], v[2], training, 0.2, 1e-4, r);
              };
            };
            const auto cpu = run_on(Device::cpu(), t, fn_with(&rm_cpu, &rv_cpu), in, cl, 46);
            const auto gpu = run_on(kGpu, t, fn_with(&rm_gpu, &rv_gpu), in, cl, 46);
            const double tol = t == kFloat64 ? 1e-10 : 2e-5;
            const std::string tag = std::string(dtype_name(t)) + (training ? " training" : " eval") +
                                    (cl ? " channels-last " : " ") +
                                    (epi == Epi::gelu ? "gelu " : residual ? "+ residual " : "") +
                                    detail::shape_str(shape);
            ASSERT_EQ(cpu.size(), gpu.size());
            for (size_t i = 0; i < cpu.size(); ++i)
              EXPECT_TRUE(matches_cpu(gpu[i], cpu[i], tol, tol)) << tag << " #" << i;
            EXPECT_TRUE(matches_cpu(rm_gpu, rm_cpu, tol, tol)) << tag << " running_mean";
            EXPECT_TRUE(matches_cpu(rv_gpu, rv_cpu, tol, tol)) << tag << " running_var";
          }
}

// batch_norm_gelu on bf16 activations with float32 parameters, as the airbench blocks run
// under autocast, in both layouts, against the CPU (float32 and float64: the test above).
TEST(CudaNn, BatchNormGeluMatchesTheCpu) {
  IGNIS_REQUIRE_CUDA();
  for (bool cl : {false, true}) {
    std::vector<std::vector<Tensor>> results;
    for (Device d : {Device::cpu(), kGpu}) {
      Tensor x = random_tensor({8, 64, 15, 15}, -3, 3, 56).to(d, kBFloat16);
      if (cl) x = x.contiguous(MemoryFormat::channels_last);
      x.requires_grad_();
      Tensor w = random_tensor({64}, 0.5, 1.5, 57).to(d, kFloat32).requires_grad_();
      Tensor b = random_tensor({64}, -0.5, 0.5, 58).to(d, kFloat32).requires_grad_();
      const Tensor y = batch_norm_gelu(x, Tensor(), Tensor(), w, b, true, 0.4, 1e-12);
      (y * random_tensor(y.sizes(), -1, 1, 59).to(d, kBFloat16)).sum().backward();
      results.push_back({y.detach(), x.grad(), w.grad(), b.grad()});
    }
    EXPECT_EQ(results[1][0].dtype(), kBFloat16);
    EXPECT_EQ(results[1][0].is_contiguous(MemoryFormat::channels_last), cl);
    const char* names[] = {"output", "grad_input", "grad_weight", "grad_bias"};
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(matches_cpu(results[1][i], results[0][i], i < 2 ? 1e-2 : 1e-4, i < 2 ? 1e-2 : 1e-3))
          << "bf16 " << (cl ? "channels-last " : "") << names[i];
  }
}

TEST(CudaNn, BatchNorm16BitInputWithFloat32ParametersMatchesTheCpu) {
  // Autocast's case: a bf16/float16 activation (and residual) with float32 weight, bias and
  // running statistics (Note [Batch norm on 16-bit inputs]); each epilogue, both layouts.
  IGNIS_REQUIRE_CUDA();
  enum class BnEpilogue { None, Relu, AddRelu };
  for (DType t : {kBFloat16, kFloat16})
    for (const Shape& shape : {Shape{4, 3, 5, 6}, Shape{8, 3, 40, 40}, Shape{2, 100, 4, 4}})
      for (bool cl : {false, true})
        for (bool training : {true, false})
          for (BnEpilogue e : {BnEpilogue::None, BnEpilogue::Relu, BnEpilogue::AddRelu}) {
            const int64_t C = shape[1];
            // Output, running statistics and the gradients of x, weight, bias (and residual).
            auto run = [&](Device d) {
              Tensor x = leaf(random_tensor(shape, -2, 3, 60), d, t, cl);
              Tensor w = leaf(random_tensor({C}, 0.5, 1.5, 61), d, kFloat32);
              Tensor b = leaf(random_tensor({C}, -0.5, 0.5, 62), d, kFloat32);
              Tensor r = e == BnEpilogue::AddRelu ? leaf(random_tensor(shape, -1, 1, 63), d, t, cl) : Tensor();
              Tensor rm = random_tensor({C}, -0.5, 0.5, 64).to(d, kFloat32);
              Tensor rv = random_tensor({C}, 0.5, 1.5, 65).to(d, kFloat32);
              const Tensor y = e == BnEpilogue::None
                                   ? batch_norm(x, rm, rv, w, b, training, 0.2, 1e-4)
                                   : batch_norm_relu(x, rm, rv, w, b, training, 0.2, 1e-4, r);
              (y * random_tensor(shape, -1, 1, 66).to(d, t)).sum().backward();
              std::vector<Tensor> out{y.detach(), rm, rv, x.grad(), w.grad(), b.grad()};
              if (r.defined()) out.push_back(r.grad());
              return out;
            };
            const auto cpu = run(Device::cpu()), gpu = run(kGpu);
            const std::string tag = std::string(dtype_name(t)) + (training ? " training" : " eval") +
                                    (cl ? " channels-last " : " ") + detail::shape_str(shape) +
                                    (e == BnEpilogue::None ? " batch_norm" : e == BnEpilogue::Relu ? " relu" : " add_relu");
            ASSERT_EQ(cpu.size(), gpu.size()) << tag;
            for (size_t i = 0; i < cpu.size(); ++i) {
              // 16-bit results (output, input and residual gradients) within a rounding step;
              // the float32 ones (statistics, parameter gradients) to float32 sums.
              const bool low = cpu[i].dtype() == t;
              EXPECT_EQ(gpu[i].dtype(), cpu[i].dtype()) << tag << " #" << i;
              EXPECT_TRUE(matches_cpu(gpu[i], cpu[i], low ? 2e-2 : 2e-5, low ? 2e-2 : 2e-5))
                  << tag << " #" << i;
            }
          }
}

TEST(CudaNn, PoolingForwardAndBackwardMatchTheCpu) {
  IGNIS_REQUIRE_CUDA();
  const Tensor x = random_tensor({2, 3, 11, 9}, -1, 1, 20);
  const Pool2dOptions max_cases[] = {
      {.kernel_size = {2, 2}},
      {.kernel_size = {3, 3}, .stride = Size2{2, 2}, .padding = {1, 1}},
      {.kernel_size = {3, 2},
       .stride = Size2{2, 1},
       .padding = {1, 0},
       .dilation = {2, 2},
       .ceil_mode = true},
  };
  // 16-bit inputs too: max pooling runs on the 16-bit values themselves on the GPU (the CPU
  // through float32), with the same values and indices, and the same gradients (exactly when
  // no windows overlap, after one rounding of float sums when they do).
  for (const Pool2dOptions& o : max_cases)
    for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16})
      for (bool cl : {false, true}) {
        const Fn fn = [&](const std::vector<Tensor>& v) { return max_pool2d(v[0], o); };
        expect_like_cpu("max_pool2d", fn, {x}, t, cl);
        // Values and argmax indices agree exactly (the first maximum wins ties on both).
        const auto [vc, ic] = max_pool2d_with_indices(leaf(x, Device::cpu(), t, cl), o);
        const auto [vg, ig] = max_pool2d_with_indices(leaf(x, kGpu, t, cl), o);
        EXPECT_TRUE(testing::equals_cpu(vg, vc)) << "max_pool2d values " << dtype_name(t);
        EXPECT_TRUE(testing::equals_cpu(ig, ic)) << "max_pool2d indices " << dtype_name(t);
      }
  // Dilated windows that miss the input altogether (taps at rows -1 and 2 of a 2-row input;
  // at -1 and 1 of a 1x1 one): -inf and index -1 on both devices, no gradient from them.
  const std::pair<Shape, Pool2dOptions> missing_cases[] = {
      {{2, 3, 2, 5},
       {.kernel_size = {2, 2}, .stride = Size2{1, 1}, .padding = {2, 1}, .dilation = {3, 2}}},
      {{1, 3, 1, 1},
       {.kernel_size = {2, 2}, .stride = Size2{1, 1}, .padding = {1, 1}, .dilation = {2, 2}}},
  };
  for (const auto& missing : missing_cases)
    for (DType t : {kFloat32, kFloat64})
      for (bool cl : {false, true}) {
        const Pool2dOptions& o = missing.second;  // a named reference: lambdas capture it
        const Tensor xs = random_tensor(missing.first, -1, 1, 21);
        const Fn fn = [&](const std::vector<Tensor>& v) { return max_pool2d(v[0], o); };
        expect_like_cpu("max_pool2d, windows missing the input", fn, {xs}, t, cl);
        const auto [vc, ic] = max_pool2d_with_indices(leaf(xs, Device::cpu(), t, cl), o);
        const auto [vg, ig] = max_pool2d_with_indices(leaf(xs, kGpu, t, cl), o);
        EXPECT_TRUE(testing::equals_cpu(vg, vc)) << "values, windows missing the input";
        EXPECT_TRUE(testing::equals_cpu(ig, ic)) << "indices, windows missing the input";
      }
  // Ties: a constant input picks the first tap of every window on both devices.
  const Tensor flat = zeros({1, 2, 6, 6});
  const auto [vc, ic] =
      max_pool2d_with_indices(flat, {.kernel_size = {3, 3}, .stride = Size2{2, 2}});
  const auto [vg, ig] =
      max_pool2d_with_indices(flat.to(kGpu), {.kernel_size = {3, 3}, .stride = Size2{2, 2}});
  EXPECT_TRUE(testing::equals_cpu(ig, ic)) << "max_pool2d ties";

  const Pool2dOptions avg_cases[] = {
      {.kernel_size = {2, 2}},
      {.kernel_size = {3, 3}, .stride = Size2{2, 2}, .padding = {1, 1}},
      {.kernel_size = {3, 3},
       .stride = Size2{2, 2},
       .padding = {1, 1},
       .ceil_mode = true,
       .count_include_pad = false},
      {.kernel_size = {2, 3}, .stride = Size2{1, 2}, .padding = {1, 1}, .divisor_override = 5},
      {.kernel_size = {2, 2}, .divisor_override = -3},  // negative: legal, as in PyTorch
  };
  for (const Pool2dOptions& o : avg_cases)
    for (DType t : {kFloat32, kFloat64})
      for (bool cl : {false, true}) {
        const Fn fn = [&](const std::vector<Tensor>& v) { return avg_pool2d(v[0], o); };
        expect_like_cpu("avg_pool2d", fn, {x}, t, cl);
      }
  for (const Size2& out : {Size2{1, 1}, Size2{4, 3}, Size2{11, 9}, Size2{5, 7}})
    for (DType t : {kFloat32, kFloat64})
      for (bool cl : {false, true}) {
        const Fn fn = [&](const std::vector<Tensor>& v) { return adaptive_avg_pool2d(v[0], out); };
        expect_like_cpu("adaptive_avg_pool2d", fn, {x}, t, cl);
      }
  // As airbench's blocks pool under bf16 autocast: channels-last, 2x2 windows over an odd
  // size. Output and gradient stay bf16 and channels-last, and equal the CPU's bit for bit.
  {
    const Tensor big = random_tensor({4, 64, 31, 31}, -3, 3, 22);
    const Tensor up = random_tensor({4, 64, 15, 15}, -1, 1, 23).to(kBFloat16);
    std::vector<Tensor> out, grad;
    for (Device d : {Device::cpu(), kGpu}) {
      Tensor xl = leaf(big, d, kBFloat16, true);
      const Tensor y = max_pool2d(xl, {.kernel_size = {2, 2}});
      (y * up.to(d)).sum().backward();
      out.push_back(y.detach());
      grad.push_back(xl.grad());
    }
    EXPECT_EQ(out[1].dtype(), kBFloat16);
    EXPECT_TRUE(out[1].is_contiguous(MemoryFormat::channels_last));
    EXPECT_TRUE(grad[1].is_contiguous(MemoryFormat::channels_last));
    EXPECT_TRUE(testing::equals_cpu(out[1], out[0])) << "bf16 2x2 max_pool2d output";
    EXPECT_TRUE(testing::equals_cpu(grad[1], grad[0])) << "bf16 2x2 max_pool2d gradient";
  }
  const Fn ap = [](const std::vector<Tensor>& v) { return adaptive_avg_pool2d(v[0], {1, 1}); };
  expect_like_cpu("adaptive_avg_pool2d", ap, {x}, kFloat16);
}

}  // namespace
}  // namespace ignis
