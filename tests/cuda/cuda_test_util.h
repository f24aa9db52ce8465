// Shared by the `cuda` tests: they skip without a device, and compare what a GPU computes
// with what the CPU computes for the same inputs (the CPU backend is the oracle; its own
// tests check it against float64 references and PyTorch).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/shape.h"
#include "ignis/cuda.h"
#include "ignis/ignis.h"
#include "support/test_support.h"

/// Skips the test (gtest's SKIPPED) when no CUDA device is usable.
#define IGNIS_REQUIRE_CUDA()                                                                       \
  do {                                                                                             \
    if (!::ignis::cuda::is_available())                                                            \
      GTEST_SKIP() << (::ignis::cuda::is_built() ? "no CUDA device" : "Ignis built without CUDA"); \
  } while (0)

namespace ignis::testing {

inline const Device kGpu = Device::cuda(0);

/// The GPU result gpu (brought back to the CPU) against the CPU result cpu: same shape and
/// dtype, values within rtol/atol (NaN matching NaN).
inline ::testing::AssertionResult matches_cpu(
    const Tensor& gpu, const Tensor& cpu, double rtol, double atol) {
  if (!gpu.is_cuda()) return ::testing::AssertionFailure() << "result is on " << gpu.device().str();
  if (gpu.sizes() != cpu.sizes())
    return ::testing::AssertionFailure() << "shape " << detail::shape_str(gpu.sizes()) << " vs "
                                         << detail::shape_str(cpu.sizes());
  if (gpu.dtype() != cpu.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(gpu.dtype()) << " vs " << dtype_name(cpu.dtype());
  return all_close(values_of(gpu.cpu()), values_of(cpu), rtol, atol);
}

/// Bitwise equality of a GPU result with the CPU's (same dtype and shape).
inline ::testing::AssertionResult equals_cpu(const Tensor& gpu, const Tensor& cpu) {
  return matches_cpu(gpu, cpu, 0, 0);
}

}  // namespace ignis::testing
