// Kernel slots of the random family and their arguments. The front ends (src/ops/random.cpp)
// reserve Philox blocks from a generator and pass (seed, offset); a kernel computes element i
// from (seed, offset, i) alone with the distributions of src/kernels/philox.h, so any split of
// the work across threads or GPU blocks gives the same values (Note [Philox streams]).
#pragma once

#include <cstdint>

#include "core/dispatch.h"

namespace ignis::detail {

/// Which distribution random_fill_kernel draws (see kernels/philox.h for each definition).
enum class RandomDist : uint8_t {
  Uniform,          ///< [a, b): philox::UniformFloat, or Uniform53 for float64
  Normal,           ///< mean a, std b: philox::Normal
  RandInt,          ///< [low, low + range): philox::RandInt
  Bernoulli,        ///< 1 where u < a (u from philox::BernoulliUniform)
  BernoulliTensor,  ///< 1 where u < p[i], p = plan operand 1
};

struct RandomFillArgs {
  RandomDist dist = RandomDist::Uniform;
  double a = 0, b = 1;  ///< uniform bounds, normal mean/std, bernoulli p
  int64_t low = 0;      ///< randint
  uint64_t range = 1;   ///< randint: high - low (>= 1)
  uint64_t seed = 0;
  uint64_t offset = 0;  ///< first Philox block of this draw
};

/// Values per Philox block of a distribution drawn into dtype (a call of n values reserves
/// ceil(n / values_per_block) blocks).
int random_values_per_block(RandomDist dist, DType dtype);

/// Fills plan operand 0 (any layout) with the distribution. Element i is the plan's flat
/// index, which is the row-major index in the tensor's logical shape: make_plan drops size-1
/// dims and merges dims but never reorders them, so the values of a view do not depend on its
/// strides. Operand 1 is p for BernoulliTensor (a floating tensor of the same shape).
inline KernelSlot<void (*)(const ElementwisePlan&, const RandomFillArgs&)> random_fill_kernel{
    "random"};

/// Writes a random permutation of 0..n-1 into the contiguous 1-D out (any dtype holding n-1):
/// the argsort of the 64-bit keys philox::PermKey (ceil(n / 2) blocks), ties by index.
inline KernelSlot<void (*)(const Tensor& out, uint64_t seed, uint64_t offset)> randperm_kernel{
    "randperm"};

}  // namespace ignis::detail
