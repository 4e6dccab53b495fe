// runtime.cpp: opening a device once per process.
#include "runtime.hpp"

#include "rlx/ir/error.hpp"

#include <map>
#include <mutex>

namespace rlx::opencl {
namespace detail {
extern const char kKernelSource[];
extern const char kCommonSource[];
} // namespace detail

const std::string& program_options() {
  static const std::string options = "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";
  return options;
}

const std::string& program_source() {
  static const std::string source = detail::kKernelSource;
  return source;
}

const std::string& common_source() {
  static const std::string source = detail::kCommonSource;
  return source;
}

cl_program generated_program(DeviceRuntime& rt, const std::string& kernels) {
  const std::string source = common_source() + kernels;
  std::lock_guard<std::mutex> lock(rt.generated_mutex);
  auto it = rt.generated.find(source);
  if (it == rt.generated.end())
    it = rt.generated
             .emplace(source, build_program(rt.context.get(), rt.device, source, program_options(),
                                            rt.cache_dir, nullptr))
             .first;
  return it->second.get();
}

cl_command_queue profiling_queue(DeviceRuntime& rt) {
  std::lock_guard<std::mutex> lock(rt.profiling_mutex);
  if (!rt.profiling_queue) {
    cl_int err = CL_SUCCESS;
    rt.profiling_queue = Queue(
        clCreateCommandQueue(rt.context.get(), rt.device.id, CL_QUEUE_PROFILING_ENABLE, &err));
    check(err, "clCreateCommandQueue (profiling) on " + rt.device.info.name);
  }
  return rt.profiling_queue.get();
}

std::shared_ptr<DeviceRuntime> open_device(int index, const std::string& cache_dir) {
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<DeviceRuntime>> opened;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = opened.find(index); it != opened.end())
    return it->second;
  std::string why;
  auto devices = enumerate_devices(&why);
  if (devices.empty())
    throw Error("rlx-opencl: device opencl:" + std::to_string(index) + " is not available: " + why);
  if (index < 0 || static_cast<std::size_t>(index) >= devices.size())
    device_info(index); // throws, naming the devices there are
  auto rt = std::make_shared<DeviceRuntime>();
  rt->device = devices[static_cast<std::size_t>(index)];
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(rt->device.platform), 0};
  rt->context = Context(clCreateContext(props, 1, &rt->device.id, nullptr, nullptr, &err));
  check(err, "clCreateContext on " + rt->device.info.name);
  rt->queue = Queue(clCreateCommandQueue(rt->context.get(), rt->device.id, 0, &err));
  check(err, "clCreateCommandQueue on " + rt->device.info.name);
  rt->cache_dir = program_cache_dir(cache_dir);
  rt->program = build_program(rt->context.get(), rt->device, program_source(), program_options(),
                              rt->cache_dir, &rt->origin);
  opened[index] = rt;
  return rt;
}

} // namespace rlx::opencl
