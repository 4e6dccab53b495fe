// devices.cpp: the devices list, and the OpenCL backend's registration (both compiled against
// rlx-opencl only when the build has it: RLX_HAS_OPENCL).
#include "rlx/runtime/devices.hpp"

#include "rlx/ir/error.hpp"
#include "rlx/runtime/backend_registry.hpp"

#include <fstream>
#include <thread>
#ifdef RLX_HAS_OPENCL
#include "rlx/opencl/backend.hpp"
#endif

namespace rlx::runtime {
namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0)
      if (auto colon = line.find(':'); colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
  return "host CPU";
}

} // namespace

std::vector<DeviceDescription> available_devices(std::string* opencl_note) {
  std::vector<DeviceDescription> out;
  DeviceDescription cpu;
  cpu.device = Device::cpu();
  cpu.name = cpu_name();
  cpu.type = "cpu";
  cpu.compute_units = static_cast<int>(std::thread::hardware_concurrency());
  out.push_back(cpu);
#ifdef RLX_HAS_OPENCL
  std::string why;
  for (const opencl::DeviceInfo& d : opencl::list_devices(&why))
    out.push_back({Device::opencl(d.index), d.name, d.platform, d.type, d.global_memory,
                   d.compute_units, d.extensions});
  if (opencl_note)
    *opencl_note = why;
#else
  if (opencl_note)
    *opencl_note = "this build of rlx has no OpenCL backend (configure with -DRLX_WITH_OPENCL=ON)";
#endif
  return out;
}

void register_opencl_backend(BackendRegistry& registry) {
#ifdef RLX_HAS_OPENCL
  registry.add(DeviceKind::opencl, [](const Device& d) {
    opencl::OpenClOptions o;
    o.device = d.index;
    return opencl::make_opencl_backend(o);
  });
#else
  (void)registry;
  throw Error("this build of rlx has no OpenCL backend (configure with -DRLX_WITH_OPENCL=ON)");
#endif
}

} // namespace rlx::runtime
