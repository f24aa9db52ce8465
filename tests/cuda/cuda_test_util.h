// Shared by the `cuda` tests: they skip without a device, and compare what a GPU computes
// with what the CPU computes for the same inputs (the CPU backend is the oracle; its own
// tests check it against float64 references and PyTorch).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/shape.h"
#include "ignis/cuda.h"
#include "ignis/ignis.h"
#include "support/test_support.h"

namespace ignis::testing {
/// A dry run (IGNIS_CUDA_TESTS_ON_CPU=1, no GPU): the tests run with kGpu standing for the
/// CPU, so the CPU is compared with itself. It proves nothing about CUDA; it finds mistakes of
/// the tests' own (a reference of another dtype, a shape or an expected message that is
/// wrong) before a GPU's time is spent on them. Tests that call the CUDA API itself fail.
inline bool dry_run_requested() {
  const char* v = std::getenv("IGNIS_CUDA_TESTS_ON_CPU");
  return v && std::string(v) == "1";
}
inline bool dry_run_on_cpu() {
  static const bool on = dry_run_requested() && !::ignis::cuda::is_available();
  return on;
}
}  // namespace ignis::testing

/// Skips the test (gtest's SKIPPED) when no CUDA device is usable (unless in a dry run), and
/// a dry run where a GPU is present (the `cuda` label runs the tests for real there).
#define IGNIS_REQUIRE_CUDA()                                                                       \
  do {                                                                                             \
    if (::ignis::testing::dry_run_requested() && ::ignis::cuda::is_available())                   \
      GTEST_SKIP() << "dry run on the CPU requested, but a GPU is here";                          \
    if (!::ignis::cuda::is_available() && !::ignis::testing::dry_run_on_cpu())                     \
      GTEST_SKIP() << (::ignis::cuda::is_built() ? "no CUDA device" : "Ignis built without CUDA"); \
  } while (0)

namespace ignis::testing {

inline const Device kGpu = dry_run_on_cpu() ? Device::cpu() : Device::cuda(0);

/// The GPU result gpu (brought back to the CPU) against the CPU result cpu: same shape and
/// dtype, values within rtol/atol (NaN matching NaN).
inline ::testing::AssertionResult matches_cpu(
    const Tensor& gpu, const Tensor& cpu, double rtol, double atol) {
  if (!gpu.is_cuda() && !dry_run_on_cpu())
    return ::testing::AssertionFailure() << "result is on " << gpu.device().str();
  if (gpu.sizes() != cpu.sizes())
    return ::testing::AssertionFailure() << "shape " << detail::shape_str(gpu.sizes()) << " vs "
                                         << detail::shape_str(cpu.sizes());
  if (gpu.dtype() != cpu.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(gpu.dtype()) << " vs " << dtype_name(cpu.dtype());
  return all_close(values_of(gpu.cpu()), values_of(cpu), rtol, atol);
}

/// A CUDA switch (set_allow_tf32, set_cudnn_benchmark, ...) on for a scope and off after it,
/// also when the scope throws: later tests of the process assume the defaults.
class ScopedSwitch {
 public:
  explicit ScopedSwitch(void (*set)(bool)) : set_(set) { set_(true); }
  ~ScopedSwitch() { set_(false); }
  ScopedSwitch(const ScopedSwitch&) = delete;
  ScopedSwitch& operator=(const ScopedSwitch&) = delete;

 private:
  void (*set_)(bool);
};

/// cuDNN restricted to deterministic algorithms for a scope (comparisons of two GPU runs).
struct DeterministicConvolutions : ScopedSwitch {
  DeterministicConvolutions() : ScopedSwitch(cuda::set_cudnn_deterministic) {}
};

/// Bitwise equality of a GPU result with the CPU's (same dtype and shape).
inline ::testing::AssertionResult equals_cpu(const Tensor& gpu, const Tensor& cpu) {
  return matches_cpu(gpu, cpu, 0, 0);
}

}  // namespace ignis::testing
