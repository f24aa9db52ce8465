// Where a tensor lives: the CPU or a CUDA device with an index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ignis {

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

/// A device: `Device::cpu()`, `Device::cuda(0)`, or parsed from "cpu", "cuda", "cuda:1".
struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  /// Parses "cpu", "cuda" or "cuda:N"; throws ValueError naming the string otherwise.
  Device(std::string_view spec);
  Device(const char* spec) : Device(std::string_view(spec)) {}

  static constexpr Device cpu() { return {DeviceType::CPU, 0}; }
  static constexpr Device cuda(int i = 0) { return {DeviceType::CUDA, i}; }
  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  /// "cpu" or "cuda:N".
  std::string str() const;
  friend constexpr bool operator==(Device a, Device b) {
    return a.type == b.type && (a.type == DeviceType::CPU || a.index == b.index);
  }
};

const char* device_type_name(DeviceType t);

}  // namespace ignis
