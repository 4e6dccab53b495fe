// cl.hpp (private): the OpenCL C API with errors as rlx::Error, RAII handles, device enumeration.
#pragma once

#include "rlx/opencl/devices.hpp"

#include <CL/cl.h>

#include <string>
#include <utility>
#include <vector>

namespace rlx::opencl {

/// The name of OpenCL status \p err ("CL_OUT_OF_RESOURCES").
std::string cl_error_name(cl_int err);

/// Throws Error("rlx-opencl: <what> failed: <name> (<code>)") unless \p err is CL_SUCCESS.
void check(cl_int err, const std::string& what);

/// An owning OpenCL handle released with \p Release.
template <class H, cl_int (*Release)(H)> class Handle {
public:
  Handle() = default;
  explicit Handle(H h) : h_(h) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~Handle() { reset(); }
  /// The raw handle (still owned).
  H get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  /// Releases the handle.
  void reset() {
    if (h_)
      Release(h_);
    h_ = nullptr;
  }

private:
  H h_ = nullptr;
};

using Context = Handle<cl_context, clReleaseContext>;
using Queue = Handle<cl_command_queue, clReleaseCommandQueue>;
using Program = Handle<cl_program, clReleaseProgram>;
using Kernel = Handle<cl_kernel, clReleaseKernel>;
using Mem = Handle<cl_mem, clReleaseMemObject>;

/// A device found by enumeration: its handles and its description.
struct FoundDevice {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  DeviceInfo info;
};

/// Every device of every platform, in `opencl:N` order; empty (with \p why) when there is no
/// OpenCL runtime or platform.
std::vector<FoundDevice> enumerate_devices(std::string* why);

} // namespace rlx::opencl
