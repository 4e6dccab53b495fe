// device.hpp: Device, the machine a Session compiles for and runs on.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlx::runtime {

/// The kind of device a backend drives.
enum class DeviceKind : std::uint8_t {
  cpu,    ///< the host CPU (rlx-cpu)
  opencl, ///< an OpenCL device (rlx-opencl, a later issue)
};

/// \returns "cpu" or "opencl".
std::string_view device_kind_name(DeviceKind k);

/// A device: its kind and an index among the devices of that kind.
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  /// The host CPU.
  static Device cpu() { return {DeviceKind::cpu, 0}; }
  /// OpenCL device number \p index.
  static Device opencl(int index = 0) { return {DeviceKind::opencl, index}; }
  /// Parses "cpu", "opencl", "opencl:1" (an index defaults to 0); throws Error naming the text and
  /// the accepted forms otherwise.
  static Device parse(std::string_view text);
  /// "cpu", "opencl:1" (the index is shown when nonzero).
  std::string str() const;

  friend auto operator<=>(const Device&, const Device&) = default;
};

} // namespace rlx::runtime
