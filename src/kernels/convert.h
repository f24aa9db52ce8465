// Value conversion between the eight storage types, host and device alike. 16-bit floats go
// through float; conversion to bool is "not zero" (as PyTorch); floating values to uint8 wrap
// modulo 256 within int32's range (as PyTorch's CPU kernels).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/host_device.h"

namespace ignis::kernels {

template <class To, class From>
IGNIS_HOST_DEVICE To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != opmath_t<From>(0);
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_unsigned_v<To> && std::is_floating_point_v<From>) {
    // Through int32, so that a negative value wraps (-1.0 -> 255 for uint8, as PyTorch) on
    // both devices: the host's truncation already takes int32's low byte, while a device's
    // direct conversion to an unsigned type clamps at 0.
    return static_cast<To>(static_cast<int32_t>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ignis::kernels
