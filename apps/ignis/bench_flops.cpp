// FLOP counts and the CPU's measured peak (see bench_flops.h).
#include "bench_flops.h"

#include <omp.h>

#include <chrono>

#include "options.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ignis_cli {

int64_t forward_macs(const std::string& model, int64_t c, int64_t s, int64_t classes) {
  if (model == "mlp") return c * s * s * 512 + 512 * classes;  // fc1, fc2
  if (model == "cnn") {
    // conv 3x3 (padding 1) c -> 32 at s x s, max-pool, conv 32 -> 64 at s/2, max-pool,
    // fc 64 (s/4)^2 -> 128, fc 128 -> classes.
    const int64_t h = s / 2, q = s / 4;
    return s * s * 32 * c * 9 + h * h * 64 * 32 * 9 + 64 * q * q * 128 + 128 * classes;
  }
  if (model == "resnet18") {
    // CIFAR stem: conv 3x3 c -> 64 at s x s; four stages of two basic blocks (two 3x3
    // convs each); stages 2-4 halve the side (rounding up) in their first conv and add a
    // 1x1 downsample on the shortcut; then fc 512 -> classes.
    int64_t macs = s * s * 64 * c * 9, in = 64, n = s;
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t planes = int64_t(64) << stage;
      if (stage > 0) n = (n + 1) / 2;
      macs += n * n * planes * in * 9 + n * n * planes * planes * 9;  // block 1
      if (in != planes) macs += n * n * planes * in;                   // downsample
      macs += 2 * n * n * planes * planes * 9;                          // block 2
      in = planes;
    }
    return macs + 512 * classes;
  }
  if (model == "airbench") {
    // models::AirbenchNet with its default widths: the 2x2 whitening conv c -> 8c (no
    // padding: side s - 1), then three blocks of conv 3x3 (same padding), max-pool 2 (side
    // rounded down), conv 3x3; then the head 256 -> classes.
    int64_t n = s - 1, in = 8 * c;
    int64_t macs = n * n * in * c * 4;
    for (const int64_t width : {int64_t(64), int64_t(256), int64_t(256)}) {
      macs += n * n * width * in * 9;
      n /= 2;
      macs += n * n * width * width * 9;
      in = width;
    }
    return macs + in * classes;
  }
  throw UsageError("--model " + model + ": no FLOP count; use mlp, cnn or resnet18");
}

namespace {

constexpr int kChains = 12;  // independent accumulators: enough to cover the FMA latency

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fma_avx512(int64_t iters) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(float(k));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  float sum = 0;
  for (int k = 0; k < kChains; ++k) sum += _mm512_reduce_add_ps(acc[k]);
  return sum;
}

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters) {
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(float(k));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  alignas(32) float out[8];
  float sum = 0;
  for (int k = 0; k < kChains; ++k) {
    _mm256_store_ps(out, acc[k]);
    for (float v : out) sum += v;
  }
  return sum;
}
#endif

// Scalar chains: the compiler may vectorise them; FLOPs are counted per scalar either way.
double fma_generic(int64_t iters) {
  float acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = float(k);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * 0.999999f + 1e-6f;
  float sum = 0;
  for (float v : acc) sum += v;
  return sum;
}

struct Loop {
  double (*run)(int64_t);
  int lanes;
};

Loop pick() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {fma_avx512, 16};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {fma_avx2, 8};
#endif
  return {fma_generic, 1};
}

}  // namespace

std::string cpu_peak_method() {
  const Loop l = pick();
  return l.lanes == 16 ? "avx512" : l.lanes == 8 ? "avx2-fma" : "generic";
}

double measure_cpu_peak_flops(double seconds) {
  const Loop loop = pick();
  volatile double sink = 0;  // keeps the loops' results alive
  // Calibrate on one thread, then time all threads together on a run of about `seconds`.
  int64_t iters = 1 << 16;
  using Clock = std::chrono::steady_clock;
  for (;;) {
    const auto t0 = Clock::now();
    sink = sink + loop.run(iters);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt > 0.02 || iters > (int64_t(1) << 40)) {
      iters = std::max<int64_t>(1, int64_t(double(iters) * seconds / std::max(dt, 1e-9)));
      break;
    }
    iters *= 4;
  }
  int threads = 1;
  const auto t0 = Clock::now();
#pragma omp parallel
  {
#pragma omp single
    threads = omp_get_num_threads();
    const double r = loop.run(iters);
#pragma omp critical
    sink = sink + r;
  }
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  return double(threads) * double(iters) * kChains * loop.lanes * 2.0 / dt;
}

}  // namespace ignis_cli
