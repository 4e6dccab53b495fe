// devices.hpp: the OpenCL devices of this machine, numbered across every platform.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rlx::opencl {

/// One OpenCL device, as `rlx devices` lists it.
struct DeviceInfo {
  int index = 0;        ///< the N of `opencl:N`: platforms in order, their devices in order
  std::string platform; ///< platform name ("Portable Computing Language")
  std::string name;     ///< device name
  std::string vendor;   ///< device vendor
  std::string version;  ///< CL_DEVICE_VERSION
  std::string driver;   ///< CL_DRIVER_VERSION
  std::string type;     ///< "gpu", "cpu", "accelerator" or "other"
  std::int64_t global_memory = 0;  ///< CL_DEVICE_GLOBAL_MEM_SIZE in bytes
  std::int64_t max_allocation = 0; ///< CL_DEVICE_MAX_MEM_ALLOC_SIZE in bytes
  std::int64_t local_memory = 0;   ///< CL_DEVICE_LOCAL_MEM_SIZE in bytes
  int compute_units = 0;           ///< CL_DEVICE_MAX_COMPUTE_UNITS
  int base_address_alignment = 0;  ///< CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes
  bool fp64 = false;               ///< whether cl_khr_fp64 is supported
  std::string extensions;          ///< CL_DEVICE_EXTENSIONS (space-separated)
};

/// Every OpenCL device of every platform, numbered as `opencl:N` counts them. Empty when no
/// OpenCL runtime (ICD) or platform is installed; \p why (when given) then says why.
std::vector<DeviceInfo> list_devices(std::string* why = nullptr);

/// OpenCL device \p index; throws Error when there is no OpenCL runtime or no such device, naming
/// the devices there are.
DeviceInfo device_info(int index);

} // namespace rlx::opencl
