// How scatter and index_add combine an update with its destination, shared by the CPU loops
// (src/cpu/index.cpp) and the CUDA kernels (src/cuda/index.cu) so both devices compute the
// same values in the same type.
#pragma once

#include <type_traits>

#include "kernels/host_device.h"

namespace ignis::kernels {

/// dst = v (scatter).
template <class T>
struct ScatterAssign {
  IGNIS_HOST_DEVICE void operator()(T& dst, T v) const { dst = v; }
};

/// dst += alpha * v (logical or for bool), in the compute type; Scaled = false for alpha 1
/// (scatter_add, index_add).
template <class T, bool Scaled>
struct ScatterAdd {
  opmath_t<T> alpha;
  IGNIS_HOST_DEVICE void operator()(T& dst, T v) const {
    using C = opmath_t<T>;
    if constexpr (std::is_same_v<T, bool>)
      dst = dst || (Scaled ? alpha && v : v);
    else if constexpr (Scaled)
      dst = T(C(dst) + alpha * C(v));
    else
      dst = T(C(dst) + C(v));
  }
};

}  // namespace ignis::kernels
