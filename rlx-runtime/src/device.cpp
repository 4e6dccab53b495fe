// device.cpp: device names and parsing.
#include "rlx/runtime/device.hpp"

#include "rlx/ir/error.hpp"

#include <charconv>

namespace rlx::runtime {

std::string_view device_kind_name(DeviceKind k) {
  switch (k) {
  case DeviceKind::cpu:
    return "cpu";
  case DeviceKind::opencl:
    return "opencl";
  }
  return "?";
}

Device Device::parse(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  Device d;
  if (kind == "cpu")
    d.kind = DeviceKind::cpu;
  else if (kind == "opencl")
    d.kind = DeviceKind::opencl;
  else
    throw Error("unknown device '" + std::string(text) +
                "' (expected cpu, opencl or opencl:<index>)");
  if (colon != std::string_view::npos) {
    const std::string_view idx = text.substr(colon + 1);
    auto [end, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), d.index);
    if (idx.empty() || ec != std::errc() || end != idx.data() + idx.size() || d.index < 0)
      throw Error("bad device index in '" + std::string(text) + "' (expected a number >= 0)");
  }
  return d;
}

std::string Device::str() const {
  std::string s(device_kind_name(kind));
  if (index != 0)
    s += ":" + std::to_string(index);
  return s;
}

} // namespace rlx::runtime
