// Core-op throughput of Ignis on the CPU, one JSON line per row, for side-by-side comparison
// with bench/core_ops.py (the same rows in PyTorch) by bench/compare_core.sh.
//
// Rows: add of two 16M-element float32 tensors, a broadcasting add [4096,4096] + [4096],
// softmax over the last dim of [4096,4096], sum over dim 0 and dim 1 of [4096,4096], float32
// matmul 1024x1024x1024, a chain of 10 elementwise ops on [64,512] (per-op overhead) and on
// [4096,4096] (memory traffic), each op by op and fused into one pass with ignis::fuse,
// batch norm (alone and with a ReLU) on bf16 channels-last activations, forward and
// backward, BatchNorm1d on [4096,512] float32, layer norm and group norm, forward and
// backward, channels-last average pooling, a transposing copy, cumsum along rows, the mean
// over 4x4 planes, exp, tanh, exact GELU and logsumexp over rows of [4096,4096], the top 5
// of each row of [4096,1000], a cat along dim 1, layers and steps outside the training rows
// (max pooling, 3x3 average pooling, AdamW, bilinear upsampling, reflect padding, the
// attention-head permute, a depthwise convolution), and a memcpy of 64 MB into another 64 MB
// buffer (the bandwidth ceiling for the others).
// Each row: warm-up, then repeat until at least --min-time seconds (and 5 repetitions) have
// passed; the reported time is the median repetition. Bytes count every read and write of
// the minimal algorithm (inputs read once, outputs written once); FLOPs count arithmetic.
//
// Usage: core_ops [--threads N] [--min-time S] [--only row,row,...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_timing.h"
#include "ignis/ignis.h"

namespace {
using ignis::bench::time_median;

struct Options {
  int threads = 1;
  double min_time = 0.5;
  std::vector<std::string> only;  // empty: all rows
};

void report(const Options& o, const char* op, const char* shape, double sec, double bytes,
            double flops, size_t reps = 0) {
  std::printf(
      "{\"engine\":\"ignis\",\"op\":\"%s\",\"shape\":\"%s\",\"threads\":%d,\"seconds\":%.6g,"
      "\"gbytes_per_s\":%.4g,\"gflops\":%.4g}\n",
      op, shape, o.threads, sec, bytes / sec / 1e9, flops / sec / 1e9);
  std::fflush(stdout);
}

void report_error(const Options& o, const char* op, const char* shape, const std::string& what) {
  std::string w;
  for (char c : what) w += (c == '"' || c == '\\') ? '\'' : c;  // keep the JSON valid
  std::printf("{\"engine\":\"ignis\",\"op\":\"%s\",\"shape\":\"%s\",\"threads\":%d,"
              "\"error\":\"%s\"}\n",
              op, shape, o.threads, w.c_str());
  std::fflush(stdout);
}

bool wanted(const Options& o, const std::string& op) {
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), op) != o.only.end();
}

/// Runs one row; an op that is missing (NotImplementedError) or fails gives an error line.
void row(const Options& o, const char* op, const char* shape, double bytes, double flops,
         const std::function<void()>& fn) {
  if (!wanted(o, op)) return;
  try {
    report(o, op, shape, time_median(fn, o.min_time), bytes, flops);
  } catch (const std::exception& e) {
    report_error(o, op, shape, e.what());
  }
}

/// memcpy of n bytes split over the same number of threads the ops get.
void threaded_memcpy(char* dst, const char* src, size_t n, int threads) {
  if (threads <= 1) {
    std::memcpy(dst, src, n);
    return;
  }
  std::vector<std::thread> pool;
  const size_t chunk = (n + size_t(threads) - 1) / size_t(threads);
  for (int t = 0; t < threads; ++t) {
    const size_t a = std::min(n, size_t(t) * chunk), b = std::min(n, a + chunk);
    pool.emplace_back([=] { std::memcpy(dst + a, src + a, b - a); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) o.threads = std::atoi(argv[++i]);
    else if (a == "--min-time" && i + 1 < argc) o.min_time = std::atof(argv[++i]);
    else if (a == "--only" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string r; std::getline(ss, r, ',');) o.only.push_back(r);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--min-time S] [--only row,row,...]\n", argv[0]);
      return 2;
    }
  }
  ignis::set_num_threads(o.threads);
  using ignis::Tensor;
  constexpr double F = 4;  // bytes per float32

  if (wanted(o, "memcpy")) {
    const size_t n = size_t(64) << 20;
    std::vector<char> src(n, 1), dst(n, 0);  // touched, so no page faults are timed
    const double s = time_median([&] { threaded_memcpy(dst.data(), src.data(), n, o.threads); },
                                 o.min_time);
    report(o, "memcpy", "64MB", s, 2.0 * double(n), 0);
  }

  // Inputs from linspace (a factory that works without the random family), shaped as needed.
  auto input = [](const ignis::Shape& shape, double lo, double hi) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return ignis::linspace(lo, hi, n).reshape(shape);
  };
  const double N16 = double(int64_t(1) << 24), R = 4096;
  const double NR = R * R;

  if (wanted(o, "add")) {
    Tensor a = input({int64_t(N16)}, -1, 1), b = input({int64_t(N16)}, 2, -2);
    row(o, "add", "[16777216]+[16777216]", 3 * N16 * F, N16, [&] { Tensor c = a + b; });
  }
  if (wanted(o, "add_broadcast")) {
    Tensor a = input({4096, 4096}, -1, 1), b = input({4096}, 0, 1);
    row(o, "add_broadcast", "[4096,4096]+[4096]", (2 * NR + R) * F, NR, [&] { Tensor c = a + b; });
  }
  if (wanted(o, "softmax")) {
    Tensor a = input({4096, 4096}, -5, 5);
    // Per element: max, subtract, exp, sum, scale (exp counted as one).
    row(o, "softmax", "[4096,4096] dim=-1", 2 * NR * F, 5 * NR,
        [&] { Tensor c = ignis::softmax(a, -1); });
  }
  if (wanted(o, "sum_dim0") || wanted(o, "sum_dim1")) {
    Tensor a = input({4096, 4096}, -1, 1);
    row(o, "sum_dim0", "[4096,4096] dim=0", (NR + R) * F, NR, [&] { Tensor c = ignis::sum(a, {0}); });
    row(o, "sum_dim1", "[4096,4096] dim=1", (NR + R) * F, NR, [&] { Tensor c = ignis::sum(a, {1}); });
  }
  if (wanted(o, "matmul")) {
    Tensor a = input({1024, 1024}, -1, 1), b = input({1024, 1024}, 1, -1);
    const double n = 1024;
    row(o, "matmul", "1024x1024x1024", 3 * n * n * F, 2 * n * n * n,
        [&] { Tensor c = ignis::matmul(a, b); });
  }
  // The chain of ten cheap elementwise ops (same chain in core_ops.py), written once for
  // tensors and for ignis::fuse.
  const auto chain = [](auto x, auto y) {
    auto t = x * y;
    t = t + y;
    t = relu(t);
    t = t * 0.5;
    t = t + 1.0;
    t = neg(t);
    t = abs(t);
    t = t - y;
    t = maximum(t, y);
    return clamp(t, -1.0, 1.0);
  };
  const auto fused_chain = ignis::fuse(chain, "chain");
  // Bytes op by op: 5 ops read two tensors, 5 read one; all write one. Fused: x and y read
  // once, the result written once (core_ops.py's fused rows run torch.jit.script).
  const double chain_bytes = 5 * 3 + 5 * 2, fused_bytes = 3;
  if (wanted(o, "small_chain") || wanted(o, "small_chain_fused")) {
    // On 32768 elements (128 KB, cache-resident) the op-by-op time is mostly per-op overhead
    // (dispatch, allocation, threading decisions).
    Tensor x = input({64, 512}, -2, 2), y = input({64, 512}, 1, -1);
    const double n = 64 * 512;
    if (wanted(o, "small_chain"))
      row(o, "small_chain", "10 ops on [64,512]", chain_bytes * n * F, 10 * n,
          [&] { Tensor t = chain(x, y); });
    if (wanted(o, "small_chain_fused"))
      row(o, "small_chain_fused", "10 ops on [64,512], fused", fused_bytes * n * F, 10 * n,
          [&] { Tensor t = fused_chain(x, y); });
  }
  if (wanted(o, "large_chain") || wanted(o, "large_chain_fused")) {
    // On 16M elements (64 MB per tensor) every op by op pass goes through memory.
    Tensor x = input({4096, 4096}, -2, 2), y = input({4096, 4096}, 1, -1);
    if (wanted(o, "large_chain"))
      row(o, "large_chain", "10 ops on [4096,4096]", chain_bytes * NR * F, 10 * NR,
          [&] { Tensor t = chain(x, y); });
    if (wanted(o, "large_chain_fused"))
      row(o, "large_chain_fused", "10 ops on [4096,4096], fused", fused_bytes * NR * F, 10 * NR,
          [&] { Tensor t = fused_chain(x, y); });
  }
  // Batch norm as ResNet-18's first stage runs it under bf16 autocast in channels-last:
  // [128, 64, 32, 32] bfloat16 with float32 weight, bias and running statistics, a training
  // forward and the backward of a given gradient (x's gradient reset each time, so nothing
  // accumulates). "batch_norm_relu" adds the ReLU, fused here and composed in PyTorch.
  // Minimal bytes per element: forward reads x and writes y; backward reads x and the
  // gradient (and, with the ReLU, y for its mask) and writes x's gradient.
  if (wanted(o, "batch_norm_bf16_cl") || wanted(o, "batch_norm_relu_bf16_cl")) {
    const ignis::Shape shape{128, 64, 32, 32};
    const double n = 128.0 * 64 * 32 * 32, B = 2;  // bytes per bf16
    auto cl = [](const Tensor& t) {
      return t.to(ignis::kBFloat16).contiguous(ignis::MemoryFormat::channels_last);
    };
    Tensor x = cl(input(shape, -2, 3)), g = cl(input(shape, 1, -1));
    Tensor w = input({64}, 0.5, 1.5), b = input({64}, -0.5, 0.5);
    Tensor rm = ignis::zeros({64}), rv = ignis::ones({64});
    for (Tensor* t : {&x, &w, &b}) t->requires_grad_();
    auto step = [&](bool relu) {
      for (Tensor* t : {&x, &w, &b}) t->mutable_grad() = Tensor();
      Tensor y = relu ? ignis::batch_norm_relu(x, rm, rv, w, b, true)
                      : ignis::batch_norm(x, rm, rv, w, b, true);
      y.backward(g);
    };
    // Arithmetic per element: statistics 3, normalisation 2, backward sums 4, input grad 5.
    if (wanted(o, "batch_norm_bf16_cl"))
      row(o,
          "batch_norm_bf16_cl",
          "[128,64,32,32] bf16 channels-last, fwd+bwd",
          5 * n * B,
          14 * n,
          [&] { step(false); });
    if (wanted(o, "batch_norm_relu_bf16_cl"))
      row(o,
          "batch_norm_relu_bf16_cl",
          "[128,64,32,32] bf16 channels-last, fwd+bwd",
          6 * n * B,
          15 * n,
          [&] { step(true); });
  }
  // Layer norm over rows of 512 and group norm (8 groups) over [32, 64, 32, 32], training
  // forward and backward with weight and bias: bytes as for batch norm (x in, y out; x and
  // the gradient in, x's gradient out).
  if (wanted(o, "layer_norm") || wanted(o, "group_norm")) {
    Tensor x = input({4096, 512}, -2, 3), g = input({4096, 512}, 1, -1);
    Tensor w = input({512}, 0.5, 1.5), b = input({512}, -0.5, 0.5);
    Tensor xi = input({32, 64, 32, 32}, -2, 3), gi = input({32, 64, 32, 32}, 1, -1);
    Tensor wi = input({64}, 0.5, 1.5), bi = input({64}, -0.5, 0.5);
    for (Tensor* t : {&x, &w, &b, &xi, &wi, &bi}) t->requires_grad_();
    const double n = 4096.0 * 512, ni = 32.0 * 64 * 32 * 32;
    row(o, "layer_norm", "[4096,512] f32, fwd+bwd", 5 * n * F, 14 * n, [&] {
      for (Tensor* t : {&x, &w, &b}) t->mutable_grad() = Tensor();
      ignis::layer_norm(x, {512}, w, b).backward(g);
    });
    row(o, "group_norm", "[32,64,32,32] f32, 8 groups, fwd+bwd", 5 * ni * F, 14 * ni, [&] {
      for (Tensor* t : {&xi, &wi, &bi}) t->mutable_grad() = Tensor();
      ignis::group_norm(xi, 8, wi, bi).backward(gi);
    });
  }
  // 2x2 average pooling of channels-last [128, 64, 32, 32], forward and backward.
  if (wanted(o, "avg_pool_cl")) {
    const auto cl = ignis::MemoryFormat::channels_last;
    Tensor x = input({128, 64, 32, 32}, -2, 3).contiguous(cl), g = input({128, 64, 16, 16}, 1, -1).contiguous(cl);
    x.requires_grad_();
    const double n = 128.0 * 64 * 32 * 32;
    row(o, "avg_pool_cl", "[128,64,32,32] f32 channels-last, 2x2, fwd+bwd", 2.5 * n * F, 1.25 * n, [&] {
      x.mutable_grad() = Tensor();
      ignis::avg_pool2d(x, {.kernel_size = {2, 2}}).backward(g);
    });
  }
  // Layout and scan rows: a transposing copy, cumsum along the contiguous dim, and the mean
  // over each plane of ResNet's last [128, 512, 4, 4] maps.
  if (wanted(o, "transpose_copy")) {
    Tensor x = input({4096, 4096}, -1, 1);
    row(o, "transpose_copy", "[4096,4096] f32, t().contiguous()", 2 * NR * F, 0,
        [&] { Tensor t = x.t().contiguous(); });
  }
  // NCHW -> channels-last conversions of ResNet's first-stage activations (also transposing
  // copies: each image's [C, HW] plane into [HW, C]), float32 and bf16.
  for (const auto& [name, dtype] : {std::pair{"to_channels_last", ignis::kFloat32},
                                    std::pair{"to_channels_last_bf16", ignis::kBFloat16}}) {
    if (!wanted(o, name)) continue;
    Tensor x = input({128, 64, 32, 32}, -1, 1).to(dtype);
    row(o, name, "[128,64,32,32] NCHW -> channels-last", 2.0 * double(x.nbytes()), 0,
        [&] { Tensor t = x.contiguous(ignis::MemoryFormat::channels_last); });
  }
  if (wanted(o, "cumsum_last")) {
    Tensor x = input({4096, 512}, -1, 1);
    const double n = 4096.0 * 512;
    row(o, "cumsum_last", "[4096,512] f32, dim 1", 2 * n * F, n, [&] { Tensor c = ignis::cumsum(x, 1); });
  }
  if (wanted(o, "mean_hw")) {
    Tensor x = input({128, 512, 4, 4}, -1, 1);
    const double n = 128.0 * 512 * 16;
    row(o, "mean_hw", "[128,512,4,4] f32, mean over (2,3)", 1.0625 * n * F, n,
        [&] { Tensor m = ignis::mean(x, {2, 3}); });
  }
  // Float32 batch norm, training forward and backward: BatchNorm1d as an MLP runs it,
  // [4096, 512], and BatchNorm2d as ResNet-18's first stage runs it in float32, NCHW and
  // channels-last [128, 64, 32, 32].
  for (const auto& [name, label, shape] :
       {std::tuple{"batch_norm_1d", "[4096,512] f32, fwd+bwd", ignis::Shape{4096, 512}},
        std::tuple{"batch_norm_2d", "[128,64,32,32] f32 NCHW, fwd+bwd",
                   ignis::Shape{128, 64, 32, 32}},
        std::tuple{"batch_norm_2d_cl", "[128,64,32,32] f32 channels-last, fwd+bwd",
                   ignis::Shape{128, 64, 32, 32}}}) {
    if (!wanted(o, name)) continue;
    const int64_t C = shape[1];
    Tensor x = input(shape, -2, 3), g = input(shape, 1, -1);
    const double n = double(x.numel()), B = 4;
    if (std::string(name).ends_with("_cl"))
      for (Tensor* t : {&x, &g}) *t = t->contiguous(ignis::MemoryFormat::channels_last);
    Tensor w = input({C}, 0.5, 1.5), b = input({C}, -0.5, 0.5);
    Tensor rm = ignis::zeros({C}), rv = ignis::ones({C});
    for (Tensor* t : {&x, &w, &b}) t->requires_grad_();
    row(o, name, label, 5 * n * B, 14 * n, [&] {
      for (Tensor* t : {&x, &w, &b}) t->mutable_grad() = Tensor();
      ignis::batch_norm(x, rm, rv, w, b, true).backward(g);
    });
  }
  // Classification heads at ImageNet's width: the fused cross-entropy of [4096, 1000] logits,
  // forward and backward (logits in, probabilities kept, gradient out), and the argmax of each
  // row, as accuracy is counted.
  if (wanted(o, "cross_entropy") || wanted(o, "argmax_rows")) {
    const double n = 4096.0 * 1000;
    Tensor x = input({4096, 1000}, -4, 4);
    std::vector<int64_t> targets(4096);
    for (size_t i = 0; i < targets.size(); ++i) targets[i] = int64_t(i * 7 % 1000);
    Tensor y = ignis::tensor(targets);
    x.requires_grad_();
    row(o, "cross_entropy", "[4096,1000] f32, fwd+bwd", 4 * n * F, 8 * n, [&] {
      x.mutable_grad() = Tensor();
      ignis::nn::functional::cross_entropy(x, y).backward();
    });
    Tensor xd = x.detach();
    row(o, "argmax_rows", "[4096,1000] f32, dim 1", n * F, n, [&] {
      Tensor m = ignis::argmax(xd, 1);
    });
  }
  // Math-bound elementwise ops (a polynomial exp, tanh or erfc per element) and logsumexp
  // over rows, on [4096,4096] float32.
  if (wanted(o, "exp") || wanted(o, "tanh") || wanted(o, "gelu") || wanted(o, "logsumexp")) {
    Tensor a = input({4096, 4096}, -5, 5);
    row(o, "exp", "[4096,4096] f32", 2 * NR * F, NR, [&] { Tensor c = ignis::exp(a); });
    row(o, "tanh", "[4096,4096] f32", 2 * NR * F, NR, [&] { Tensor c = ignis::tanh(a); });
    row(o, "gelu", "[4096,4096] f32, exact (erf)", 2 * NR * F, NR,
        [&] { Tensor c = ignis::gelu(a, "none"); });
    row(o, "logsumexp", "[4096,4096] f32, dim 1", (NR + R) * F, 3 * NR,
        [&] { Tensor c = ignis::logsumexp(a, {1}); });
  }
  // More math-bound float ops (src/kernels/fast_math.h, fast_trig.h, fast_pow.h): sin over a
  // range that takes a few quadrants, log1p of non-negative values, softplus (an exp and a
  // log1p), a non-integer power of non-negative values.
  if (wanted(o, "sin") || wanted(o, "log1p") || wanted(o, "softplus") || wanted(o, "pow")) {
    Tensor a = input({4096, 4096}, -5, 5), p = input({4096, 4096}, 0, 10);
    row(o, "sin", "[4096,4096] f32", 2 * NR * F, NR, [&] { Tensor c = ignis::sin(a); });
    row(o, "log1p", "[4096,4096] f32, in [0,10]", 2 * NR * F, NR,
        [&] { Tensor c = ignis::log1p(p); });
    row(o, "softplus", "[4096,4096] f32", 2 * NR * F, NR, [&] { Tensor c = ignis::softplus(a); });
    row(o, "pow", "[4096,4096] f32 in [0,10], ^2.5", 2 * NR * F, NR,
        [&] { Tensor c = ignis::pow(p, 2.5); });
  }
  // masked_fill of [4096,4096] under a mask with no pattern a branch predictor could learn
  // (where sin(1000 x) > 0), as attention masks and padding masks are applied.
  if (wanted(o, "masked_fill")) {
    Tensor a = input({4096, 4096}, -5, 5);
    Tensor mask = ignis::gt(ignis::sin(ignis::mul(a, 1000.0)), 0.0);
    row(o, "masked_fill", "[4096,4096] f32, bool mask", NR * (2 * F + 1), 0,
        [&] { Tensor c = ignis::masked_fill(a, mask, -1e9); });
  }
  // The top 5 of each row of [4096,1000] scores (top-5 accuracy), in an order that is not
  // sorted (sin of a ramp), and a cat along dim 1 of two [2048,512] (rows of the output
  // interleave the inputs; everything fits in the last-level cache).
  if (wanted(o, "topk5")) {
    Tensor s = ignis::sin(input({4096, 1000}, 0, 4096000));
    row(o, "topk5", "[4096,1000] f32, k=5 dim 1", 4096.0 * 1000 * F, 0,
        [&] { auto vi = ignis::topk(s, 5, 1); });
  }
  if (wanted(o, "cat_dim1")) {
    Tensor c1 = input({2048, 512}, -1, 1), c2 = input({2048, 512}, 1, -1);
    row(o, "cat_dim1", "2x[2048,512] f32 -> [2048,1024]", 4.0 * 2048 * 1024 * F, 0,
        [&] { Tensor c = ignis::cat({c1, c2}, 1); });
  }
  // Layers and steps outside the training rows (each once far behind PyTorch): max pooling
  // 3x3 stride 2 padding 1 as ResNet's ImageNet stem, NCHW and channels-last, forward and
  // backward; an AdamW step over eight [1024,1024] parameters; a 2x bilinear upsample forward
  // and backward; a reflect pad of CIFAR-sized images by 4; the attention-head swap
  // [64,12,128,64] -> [64,128,12,64]; a depthwise 3x3 convolution forward and backward.
  for (const auto& [name, cl] :
       {std::pair{"max_pool3x3", false}, std::pair{"max_pool3x3_cl", true}}) {
    if (!wanted(o, name)) continue;
    const auto fmt = cl ? ignis::MemoryFormat::channels_last : ignis::MemoryFormat::contiguous;
    Tensor x = input({64, 64, 64, 64}, -1, 1).contiguous(fmt),
           g = input({64, 64, 32, 32}, 1, -1).contiguous(fmt);
    x.requires_grad_();
    const double n = 64.0 * 64 * 64 * 64;
    // Bytes: x read, y and int64 indices written; gradient and indices read, x's gradient written.
    row(o,
        name,
        "[64,64,64,64] f32, 3x3 s2 p1, fwd+bwd",
        (n + n / 4 * 3 + n / 4 * 3 + n) * F,
        2.25 * n,
        [&] {
          x.mutable_grad() = Tensor();
          ignis::max_pool2d(
              x, {.kernel_size = {3, 3}, .stride = ignis::Size2{2, 2}, .padding = {1, 1}})
              .backward(g);
        });
  }
  // 3x3 stride-1 average pooling (Inception-style blocks) of [32,64,56,56], forward and
  // backward, NCHW and channels-last.
  for (const auto& [name, cl] :
       {std::pair{"avg_pool3x3", false}, std::pair{"avg_pool3x3_cl", true}}) {
    if (!wanted(o, name)) continue;
    const auto fmt = cl ? ignis::MemoryFormat::channels_last : ignis::MemoryFormat::contiguous;
    Tensor x = input({32, 64, 56, 56}, -1, 1).contiguous(fmt),
           g = input({32, 64, 56, 56}, 1, -1).contiguous(fmt);
    x.requires_grad_();
    const double n = 32.0 * 64 * 56 * 56;
    // Bytes: x read, y written; gradient read, x's gradient written. Flops: 9 adds each way.
    row(o, name, "[32,64,56,56] f32, 3x3 s1 p1, fwd+bwd", 4 * n * F, 18 * n, [&] {
      x.mutable_grad() = Tensor();
      ignis::avg_pool2d(x, {.kernel_size = {3, 3}, .stride = ignis::Size2{1, 1}, .padding = {1, 1}})
          .backward(g);
    });
  }
  if (wanted(o, "adamw")) {
    std::vector<Tensor> params;
    for (int i = 0; i < 8; ++i) {
      params.push_back(input({1024, 1024}, -1, 1).requires_grad_());
      params.back().mutable_grad() = input({1024, 1024}, -1e-3, 1e-3);
    }
    ignis::optim::AdamW opt(params, {.lr = 1e-3});
    const double n = 8.0 * 1024 * 1024;
    // Reads parameter, gradient and both moments; writes parameter and moments.
    row(o, "adamw", "8x[1024,1024] f32, one step", 7 * n * F, 12 * n, [&] { opt.step(); });
  }
  if (wanted(o, "interpolate_bilinear")) {
    Tensor x = input({32, 64, 32, 32}, -1, 1), g = input({32, 64, 64, 64}, 1, -1);
    x.requires_grad_();
    const double n = 32.0 * 64 * 64 * 64;  // output elements
    row(o, "interpolate_bilinear", "[32,64,32,32] f32 x2, fwd+bwd", 2.5 * n * F, 14 * n, [&] {
      x.mutable_grad() = Tensor();
      ignis::nn::functional::interpolate(x, {.scale_factor = 2.0, .mode = "bilinear"}).backward(g);
    });
  }
  if (wanted(o, "pad_reflect")) {
    Tensor x = input({512, 3, 32, 32}, -1, 1);
    row(o,
        "pad_reflect",
        "[512,3,32,32] f32 by 4",
        (512.0 * 3 * 32 * 32 + 512.0 * 3 * 40 * 40) * F,
        0,
        [&] {
          Tensor y = ignis::nn::functional::pad(x, {4, 4, 4, 4}, "reflect");
        });
  }
  if (wanted(o, "permute_heads")) {
    Tensor x = input({64, 12, 128, 64}, -1, 1);
    row(o,
        "permute_heads",
        "[64,12,128,64] f32 permute(0,2,1,3)",
        2.0 * double(x.nbytes()),
        0,
        [&] {
          Tensor t = x.permute({0, 2, 1, 3}).contiguous();
        });
  }
  // Depthwise 3x3 convolutions forward and backward: NCHW, channels-last, and stride 2
  // (MobileNet's downsampling layers).
  for (const auto& [name, cl, stride] :
       {std::tuple{"conv_depthwise", false, int64_t(1)},
        std::tuple{"conv_depthwise_cl", true, int64_t(1)},
        std::tuple{"conv_depthwise_s2", false, int64_t(2)}}) {
    if (!wanted(o, name)) continue;
    const auto fmt = cl ? ignis::MemoryFormat::channels_last : ignis::MemoryFormat::contiguous;
    const int64_t side = 32 / stride;
    Tensor x = input({32, 128, 32, 32}, -1, 1).contiguous(fmt),
           w = input({128, 1, 3, 3}, -0.1, 0.1);
    Tensor g = input({32, 128, side, side}, 1, -1).contiguous(fmt);
    for (Tensor* t : {&x, &w}) t->requires_grad_();
    const double n = 32.0 * 128 * 32 * 32, m = 32.0 * 128 * side * side;
    const std::string shape = std::string("[32,128,32,32] f32 3x3 groups 128") +
                              (cl ? " channels-last" : "") + (stride == 2 ? " stride 2" : "") +
                              ", fwd+bwd";
    row(o, name, shape.c_str(), (3 * n + 2 * m) * F, 3 * 18 * m, [&] {
      for (Tensor* t : {&x, &w}) t->mutable_grad() = Tensor();
      ignis::conv2d(x, w, Tensor(), {.stride = {stride, stride}, .padding = {1, 1}, .groups = 128})
          .backward(g);
    });
  }
  return 0;
}
