// Value conversion between the eight storage types, host and device alike. 16-bit floats go
// through float; conversion to bool is "not zero" (as PyTorch).
#pragma once

#include "kernels/host_device.h"

namespace ignis::kernels {

template <class To, class From>
IGNIS_HOST_DEVICE To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != opmath_t<From>(0);
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return static_cast<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ignis::kernels
