// Where a tensor's memory lives.
#pragma once

#include <string>

namespace tileops {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  friend bool operator==(const Device&, const Device&) = default;
  std::string to_string() const;  // "cpu", "cuda:1"
};

inline constexpr Device kCpu{};

}  // namespace tileops
