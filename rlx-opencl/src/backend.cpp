// backend.cpp: OpenClBackend.
#include "rlx/opencl/backend.hpp"

#include "executable.hpp"
#include "lower.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/opencl/claims.hpp"
#include "runtime.hpp"

#include <algorithm>
#include <type_traits>

namespace rlx::opencl {

OpenClBackend::OpenClBackend(OpenClOptions opts) : opts_(std::move(opts)) {
  if (opts_.max_buffer_bytes < 0)
    throw Error("rlx-opencl: max_buffer_bytes must be >= 0 (0 = the device's limit), got " +
                std::to_string(opts_.max_buffer_bytes));
  rt_ = open_device(opts_.device, opts_.cache_dir);
}

OpenClBackend::~OpenClBackend() = default;

std::string OpenClBackend::name() const {
  return "opencl";
}

const ir::ClaimSet& OpenClBackend::claims() const {
  return opencl_claims();
}

std::int64_t OpenClBackend::alignment() const {
  std::int64_t a = std::max(64, rt_->device.info.base_address_alignment);
  while ((a & (a - 1)) != 0) // a power of two the planner accepts
    a += a & -a;
  return a;
}

std::int64_t OpenClBackend::scratch_bytes(const ir::Graph& g, ir::NodeId id) const {
  const ir::OpKind op = g.node(id).op;
  return op == ir::OpKind::LayerNormGrad || op == ir::OpKind::RmsNormGrad
             ? norm_grad_scratch_bytes(g, id)
             : 0;
}

const DeviceInfo& OpenClBackend::device() const {
  return rt_->device.info;
}

std::unique_ptr<compile::Executable> OpenClBackend::compile(const ir::Module& lir) const {
  const std::int64_t limit = rt_->device.info.max_allocation;
  const std::int64_t max_chunk =
      opts_.max_buffer_bytes > 0 ? std::min(opts_.max_buffer_bytes, limit) : limit;
  return std::make_unique<OpenClExecutable>(lir, rt_, alignment(), max_chunk,
                                            KernelChoices{opts_.gemm, opts_.attention});
}

std::unique_ptr<compile::Executable>
OpenClBackend::compile_with_weights(const ir::Module& lir,
                                    std::shared_ptr<compile::WeightRegion> weights) const {
  if (!weights)
    throw Error("rlx-opencl: compile_with_weights needs a weight region");
  const std::int64_t limit = rt_->device.info.max_allocation;
  const std::int64_t max_chunk =
      opts_.max_buffer_bytes > 0 ? std::min(opts_.max_buffer_bytes, limit) : limit;
  return std::make_unique<OpenClExecutable>(lir, rt_, alignment(), max_chunk,
                                            KernelChoices{opts_.gemm, opts_.attention},
                                            std::move(weights), opts_.device);
}

std::unique_ptr<compile::Backend> make_opencl_backend(const OpenClOptions& opts) {
  return std::make_unique<OpenClBackend>(opts);
}

namespace {
const OpenClExecutable* as_opencl(const compile::Executable& exe, const char* who) {
  auto* e = dynamic_cast<const OpenClExecutable*>(&exe);
  if (!e)
    throw Error(std::string(who) + ": the executable was not compiled by the OpenCL backend");
  return e;
}
} // namespace

std::string kernel_listing(const compile::Executable& exe) {
  return as_opencl(exe, "kernel_listing")->listing();
}

void set_kernel_profiling(compile::Executable& exe, bool on) {
  const_cast<OpenClExecutable*>(as_opencl(exe, "set_kernel_profiling"))->set_profiling(on);
}

compile::KernelTimings kernel_timings(const compile::Executable& exe) {
  return as_opencl(exe, "kernel_timings")->timings();
}

int arena_buffer_count(const compile::Executable& exe) {
  return as_opencl(exe, "arena_buffer_count")->buffer_count();
}

} // namespace rlx::opencl
