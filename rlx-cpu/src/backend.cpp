// backend.cpp: CpuBackend.
#include "rlx/cpu/backend.hpp"

#include "executable.hpp"
#include "lower.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/cpu/claims.hpp"
#include "rlx/ir/error.hpp"

#include <tbb/info.h>

namespace rlx::cpu {

CpuBackend::CpuBackend(CpuOptions opts) : opts_(opts) {
  if (opts_.num_threads < 0)
    throw Error("rlx-cpu: num_threads must be >= 0 (0 = every core), got " +
                std::to_string(opts_.num_threads));
  threads_ = opts_.num_threads > 0 ? opts_.num_threads : tbb::info::default_concurrency();
  if (threads_ < 1)
    threads_ = 1;
}

std::string CpuBackend::name() const {
  return "cpu";
}

const ir::ClaimSet& CpuBackend::claims() const {
  return cpu_claims();
}

std::int64_t CpuBackend::alignment() const {
  return 64;
}

std::int64_t CpuBackend::scratch_bytes(const ir::Graph& g, ir::NodeId id) const {
  const ir::Node& n = g.node(id);
  if (ir::is_leaf(n.op) || !n.shape.is_static() || n.shape.numel() == 0 ||
      !cpu_claims().supports(g, id) || compile::is_pure_view(g, id))
    return 0;
  NodeView view{g, id, opts_, threads_};
  const KernelImpl* impl = select_kernel(view);
  return impl && impl->scratch ? impl->scratch(view) : 0;
}

std::unique_ptr<compile::Executable> CpuBackend::compile(const ir::Module& lir) const {
  return std::make_unique<CpuExecutable>(lir, *this);
}

std::unique_ptr<compile::Backend> make_cpu_backend(const CpuOptions& opts) {
  return std::make_unique<CpuBackend>(opts);
}

std::string kernel_listing(const compile::Executable& exe) {
  const auto* cpu = dynamic_cast<const CpuExecutable*>(&exe);
  if (!cpu)
    throw Error("kernel_listing: the executable was not compiled by the CPU backend");
  return cpu->listing();
}

} // namespace rlx::cpu
