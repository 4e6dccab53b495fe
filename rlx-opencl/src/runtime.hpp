// runtime.hpp (private): DeviceRuntime, what every executable on one device shares: the context,
// the in-order queue and the kernel program, opened once per process and device.
#pragma once

#include "cl.hpp"
#include "program_cache.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace rlx::opencl {

/// One opened device. Executables share its queue (one in-order queue per device: kernels run in
/// enqueue order with no host round trip between them).
struct DeviceRuntime {
  FoundDevice device;
  Context context;
  Queue queue;
  Program program;
  ProgramOrigin origin = ProgramOrigin::source;
  std::string cache_dir; ///< the program cache folder ("" = none)
  std::mutex profiling_mutex;
  Queue profiling_queue; ///< in order, CL_QUEUE_PROFILING_ENABLE; made when first profiled
  std::mutex generated_mutex;
  std::map<std::string, Program> generated; ///< generated programs by their source
};

/// The device's profiling queue (an in-order queue with CL_QUEUE_PROFILING_ENABLE), created on
/// first use: profiled runs go there so that the plain queue never pays for timestamps.
cl_command_queue profiling_queue(DeviceRuntime& rt);

/// The build options of the kernel program.
const std::string& program_options();

/// The kernel program's source: every .cl file of src/kernels, embedded at build time.
const std::string& program_source();

/// The common prefix of every program (00_common.cl, 01_math.cl): generated programs start with it.
const std::string& common_source();

/// The program of generated OpenCL C \p kernels (appended to common_source()), built once per
/// process and device and kept in the disk cache like the main program (keyed by its source
/// hash). Throws Error with the build log when it does not build.
cl_program generated_program(DeviceRuntime& rt, const std::string& kernels);

/// Opens device \p index (once per process: later calls return the same runtime), building its
/// program or loading it from the cache folder \p cache_dir (see program_cache_dir). Throws Error
/// when there is no OpenCL runtime or no such device.
std::shared_ptr<DeviceRuntime> open_device(int index, const std::string& cache_dir);

} // namespace rlx::opencl
