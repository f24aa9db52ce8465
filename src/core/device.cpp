// Device parsing and names.
#include <charconv>

#include "core/error.h"
#include "ignis/device.h"

namespace ignis {

const char* device_type_name(DeviceType t) { return t == DeviceType::CPU ? "cpu" : "cuda"; }

Device::Device(std::string_view spec) {
  if (spec == "cpu") {
    *this = cpu();
    return;
  }
  if (spec == "cuda") {
    *this = cuda(0);
    return;
  }
  if (spec.substr(0, 5) == "cuda:" && spec.size() > 5) {
    int idx = -1;
    auto [ptr, ec] = std::from_chars(spec.data() + 5, spec.data() + spec.size(), idx);
    if (ec == std::errc() && ptr == spec.data() + spec.size() && idx >= 0) {
      *this = cuda(idx);
      return;
    }
  }
  throw ValueError(fmt::format(
      "[device] cannot parse device '{}': expected 'cpu', 'cuda' or 'cuda:N'", spec));
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index);
}

}  // namespace ignis
