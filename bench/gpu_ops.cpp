// GPU throughput of the core CUDA kernels, one JSON line per row, timed with CUDA events
// (median of repetitions after a warm-up; each repetition synchronises on its stop event).
// Bytes count every read and write of the minimal algorithm and FLOPs the arithmetic, so
// GB/s and TFLOP/s can be set against the device's limits (an H200: ~4.8 TB/s HBM3e,
// ~67 TFLOP/s float32 without tensor cores). Exits 77 without a GPU.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "ignis/cuda.h"
#include "ignis/ignis.h"
#include "gpu_timing.h"

namespace {
using namespace ignis;

using bench::gpu_median_ms;

void row(const char* name, double ms, double bytes, double flops) {
  fmt::print(
      "{{\"engine\": \"ignis\", \"device\": \"cuda\", \"row\": \"{}\", \"ms\": {:.4f}, "
      "\"GB/s\": {:.1f}, \"TFLOP/s\": {:.2f}}}\n",
      name,
      ms,
      bytes / ms * 1e-6,
      flops / ms * 1e-9);
}
}  // namespace

int main() {
  if (!cuda::is_available()) {
    fmt::print(stderr, "gpu_ops: no CUDA device\n");
    return 77;
  }
  const Device gpu = Device::cuda(0);
  const auto props = cuda::get_device_properties(0);
  fmt::print(
      "{{\"info\": \"{}\", \"sm\": \"{}.{}\", \"multiprocessors\": {}, \"memory_GiB\": {:.1f}}}\n",
      props.name,
      props.major,
      props.minor,
      props.multiprocessor_count,
      double(props.total_memory) / (1 << 30));
  const int64_t n = int64_t(1) << 28;  // 1 GiB of float32 per tensor
  Tensor a = rand({n}, TensorOptions(kFloat32, gpu)), b = rand({n}, TensorOptions(kFloat32, gpu));
  Tensor c = empty({n}, TensorOptions(kFloat32, gpu));
  row("copy_1GiB", gpu_median_ms([&] { c.copy_(a); }), 8.0 * double(n), 0);
  row("add_1GiB", gpu_median_ms([&] { Tensor r = a + b; }), 12.0 * double(n), double(n));
  row("exp_1GiB", gpu_median_ms([&] { Tensor r = exp(a); }), 8.0 * double(n), double(n));
  row("sum_1GiB", gpu_median_ms([&] { Tensor r = a.sum(); }), 4.0 * double(n), double(n));
  Tensor m = rand({16384, 16384}, TensorOptions(kFloat32, gpu));
  row("sum_dim0_16k",
      gpu_median_ms([&] { Tensor r = m.sum({0}); }),
      4.0 * 16384 * 16384,
      16384.0 * 16384);
  row("softmax_16k", gpu_median_ms([&] { Tensor r = softmax(m, 1); }), 8.0 * 16384 * 16384, 0);
  row("randn_1GiB", gpu_median_ms([&] { c.normal_(); }), 4.0 * double(n), 0);
  // bench/core_ops's ten-op chain on two 1 GiB tensors, op by op and through ignis::fuse
  // (src/cuda/fuse.cu); bytes of the fused pass (a and b read, the result written once).
  const auto chain = [](auto x, auto y) {
    auto t = relu(x * y + y) * 0.5 + 1.0;
    t = abs(-t) - y;
    return clamp(maximum(t, y), -1.0, 1.0);
  };
  const auto fused_chain = fuse(chain, "chain");
  row("chain10_1GiB", gpu_median_ms([&] { Tensor r = chain(a, b); }), 12.0 * double(n), 10.0 * double(n));
  row("chain10_fused_1GiB", gpu_median_ms([&] { Tensor r = fused_chain(a, b); }), 12.0 * double(n),
      10.0 * double(n));
  const int64_t k = 8192;
  for (DType t : {kFloat32, kBFloat16}) {
    Tensor x = randn({k, k}, TensorOptions(t, gpu)), y = randn({k, k}, TensorOptions(t, gpu));
    const double flops = 2.0 * double(k) * double(k) * double(k);
    row(t == kFloat32 ? "matmul_8192_f32" : "matmul_8192_bf16",
        gpu_median_ms([&] { Tensor r = matmul(x, y); }, 10),
        3.0 * double(k * k) * double(itemsize(t)),
        flops);
  }
  cuda::set_allow_tf32(true);
  Tensor x = randn({k, k}, TensorOptions(kFloat32, gpu)),
         y = randn({k, k}, TensorOptions(kFloat32, gpu));
  row("matmul_8192_tf32",
      gpu_median_ms([&] { Tensor r = matmul(x, y); }, 10),
      12.0 * double(k * k),
      2.0 * double(k) * double(k) * double(k));
  const auto s = cuda::memory_stats(0);
  fmt::print(
      "{{\"memory\": {{\"peak_allocated_MiB\": {}, \"reserved_MiB\": {}, \"cudaMalloc\": {}}}}}\n",
      s.peak_allocated >> 20,
      s.reserved >> 20,
      s.num_device_allocs);
  return 0;
}
