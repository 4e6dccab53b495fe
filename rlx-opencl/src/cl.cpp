// cl.cpp: OpenCL error names, device enumeration and description.
#include "cl.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::opencl {

std::string cl_error_name(cl_int err) {
  switch (err) {
#define RLX_CL_ERR(e)                                                                              \
  case e:                                                                                          \
    return #e;
    RLX_CL_ERR(CL_SUCCESS)
    RLX_CL_ERR(CL_DEVICE_NOT_FOUND)
    RLX_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    RLX_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    RLX_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    RLX_CL_ERR(CL_OUT_OF_RESOURCES)
    RLX_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    RLX_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    RLX_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    RLX_CL_ERR(CL_INVALID_VALUE)
    RLX_CL_ERR(CL_INVALID_PLATFORM)
    RLX_CL_ERR(CL_INVALID_DEVICE)
    RLX_CL_ERR(CL_INVALID_CONTEXT)
    RLX_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    RLX_CL_ERR(CL_INVALID_MEM_OBJECT)
    RLX_CL_ERR(CL_INVALID_BINARY)
    RLX_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    RLX_CL_ERR(CL_INVALID_PROGRAM)
    RLX_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    RLX_CL_ERR(CL_INVALID_KERNEL_NAME)
    RLX_CL_ERR(CL_INVALID_KERNEL)
    RLX_CL_ERR(CL_INVALID_ARG_INDEX)
    RLX_CL_ERR(CL_INVALID_ARG_VALUE)
    RLX_CL_ERR(CL_INVALID_ARG_SIZE)
    RLX_CL_ERR(CL_INVALID_KERNEL_ARGS)
    RLX_CL_ERR(CL_INVALID_WORK_DIMENSION)
    RLX_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    RLX_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    RLX_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    RLX_CL_ERR(CL_INVALID_BUFFER_SIZE)
    RLX_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
#undef RLX_CL_ERR
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "CL error";
  }
}

void check(cl_int err, const std::string& what) {
  if (err != CL_SUCCESS)
    throw Error("rlx-opencl: " + what + " failed: " + cl_error_name(err) + " (" +
                std::to_string(err) + ")");
}

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return {};
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0')
    s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0)
    return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0')
    s.pop_back();
  return s;
}

template <class T> T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

DeviceInfo describe(cl_platform_id p, cl_device_id d, int index) {
  DeviceInfo i;
  i.index = index;
  i.platform = platform_string(p, CL_PLATFORM_NAME);
  i.name = device_string(d, CL_DEVICE_NAME);
  i.vendor = device_string(d, CL_DEVICE_VENDOR);
  i.version = device_string(d, CL_DEVICE_VERSION);
  i.driver = device_string(d, CL_DRIVER_VERSION);
  auto type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  i.type = (type & CL_DEVICE_TYPE_GPU)           ? "gpu"
           : (type & CL_DEVICE_TYPE_CPU)         ? "cpu"
           : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
                                                 : "other";
  i.global_memory = static_cast<std::int64_t>(device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE));
  i.max_allocation =
      static_cast<std::int64_t>(device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
  i.local_memory = static_cast<std::int64_t>(device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE));
  i.compute_units = static_cast<int>(device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS));
  i.base_address_alignment =
      static_cast<int>(device_value<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
  i.extensions = device_string(d, CL_DEVICE_EXTENSIONS);
  i.fp64 = (" " + i.extensions + " ").find(" cl_khr_fp64 ") != std::string::npos;
  return i;
}

} // namespace

std::vector<FoundDevice> enumerate_devices(std::string* why) {
  std::vector<FoundDevice> out;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0) {
    if (why)
      *why = "no OpenCL platform found (" +
             (err == CL_SUCCESS ? std::string("no platforms") : cl_error_name(err)) +
             "): install an OpenCL driver (ICD), e.g. Debian's pocl-opencl-icd or a GPU vendor's";
    return out;
  }
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0)
      continue;
    std::vector<cl_device_id> devices(nd);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr), "clGetDeviceIDs");
    for (cl_device_id d : devices)
      out.push_back({p, d, describe(p, d, static_cast<int>(out.size()))});
  }
  if (out.empty() && why)
    *why = "the OpenCL platforms of this machine have no devices";
  return out;
}

std::vector<DeviceInfo> list_devices(std::string* why) {
  std::vector<DeviceInfo> out;
  for (FoundDevice& d : enumerate_devices(why))
    out.push_back(std::move(d.info));
  return out;
}

DeviceInfo device_info(int index) {
  std::string why;
  auto all = enumerate_devices(&why);
  if (all.empty())
    throw Error("rlx-opencl: device opencl:" + std::to_string(index) + " is not available: " + why);
  if (index < 0 || static_cast<std::size_t>(index) >= all.size()) {
    std::string names;
    for (const FoundDevice& d : all)
      names += (names.empty() ? "" : ", ") + std::string("opencl:") + std::to_string(d.info.index) +
               " " + d.info.name;
    throw Error("rlx-opencl: there is no device opencl:" + std::to_string(index) +
                " (this machine has " + std::to_string(all.size()) + ": " + names + ")");
  }
  return all[static_cast<std::size_t>(index)].info;
}

} // namespace rlx::opencl
