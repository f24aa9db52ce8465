// Basics for code that compiles for both the host and a CUDA device: the IGNIS_HOST_DEVICE
// macro, a compile-time type list, and the compute type of each storage type.
// Only header-only, host+device-safe code may be included from src/kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ignis/half.h"
#include "ignis/macros.h"

namespace ignis::kernels {

template <class... Ts>
struct TypeList {};

/// Calls f.template operator()<T>() for every T of the list (used at registration to fill
/// kernel tables: one instantiation per functor, no other list of ops anywhere).
template <class... Ts, class F>
void for_each_type(TypeList<Ts...>, F&& f) {
  (f.template operator()<Ts>(), ...);
}

/// The type arithmetic happens in: float for the 16-bit floats (as PyTorch's opmath_t),
/// the storage type otherwise.
template <class T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <class T>
using opmath_t = typename OpMath<T>::type;

template <class T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// False in the device pass of a CUDA compilation: functors pick host-only code (the float sin,
/// cos and pow of fast_trig.h and fast_pow.h, which read host tables or favour float64) with
/// `if constexpr (kCompiledForHost ...)` and keep the device's own functions on the GPU.
#if defined(__CUDA_ARCH__)
inline constexpr bool kCompiledForHost = false;
#else
inline constexpr bool kCompiledForHost = true;
#endif

template <class T>
IGNIS_HOST_DEVICE bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

}  // namespace ignis::kernels
