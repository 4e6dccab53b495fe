// devices.hpp: the devices this build of rlx can run on (the CPU and every OpenCL device), as
// `rlx devices` lists them.
#pragma once

#include "rlx/runtime/device.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rlx::runtime {

/// One usable device and its description.
struct DeviceDescription {
  Device device;                 ///< what `--device` names it ("cpu", "opencl:1")
  std::string name;              ///< the device's own name
  std::string platform;          ///< OpenCL platform (empty for the CPU)
  std::string type;              ///< "cpu", "gpu", "accelerator", "other"
  std::int64_t memory_bytes = 0; ///< global memory (0 when unknown)
  int compute_units = 0;         ///< cores / compute units
  std::string extensions;        ///< OpenCL extensions (empty for the CPU)
};

/// Every device: the CPU first, then each OpenCL device of each platform. \p opencl_note (when
/// given) says why there is no OpenCL device: a build without OpenCL, no OpenCL runtime, or no
/// platform; empty when OpenCL devices were found.
std::vector<DeviceDescription> available_devices(std::string* opencl_note = nullptr);

} // namespace rlx::runtime
