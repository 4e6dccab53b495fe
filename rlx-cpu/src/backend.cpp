// backend.cpp: CpuBackend.
#include "rlx/cpu/backend.hpp"

#include "executable.hpp"
#include "lower.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/cpu/claims.hpp"
#include "rlx/ir/error.hpp"

#include <tbb/info.h>

#include <type_traits>

namespace rlx::cpu {

std::string_view gemm_provider_name(GemmProvider p) {
  switch (p) {
  case GemmProvider::automatic:
    return "auto";
  case GemmProvider::onednn:
    return "onednn";
  case GemmProvider::openblas:
    return "openblas";
  case GemmProvider::packed:
    return "packed";
  }
  return "?";
}

GemmProvider parse_gemm_provider(std::string_view name) {
  for (GemmProvider p : {GemmProvider::automatic, GemmProvider::onednn, GemmProvider::openblas,
                         GemmProvider::packed})
    if (gemm_provider_name(p) == name)
      return p;
  throw Error("rlx-cpu: unknown GEMM provider '" + std::string(name) +
              "' (auto, onednn, openblas or packed)");
}

CpuBackend::CpuBackend(CpuOptions opts)
    : opts_(opts), gate_(opts_.io_gate ? *opts_.io_gate : cpu_io_gate_defaults()) {
  if (opts_.num_threads < 0)
    throw Error("rlx-cpu: num_threads must be >= 0 (0 = every core), got " +
                std::to_string(opts_.num_threads));
  if (opts_.gemm_measure_min_work < 0)
    throw Error("rlx-cpu: gemm_measure_min_work must be >= 0, got " +
                std::to_string(opts_.gemm_measure_min_work));
  threads_ = opts_.num_threads > 0 ? opts_.num_threads : tbb::info::default_concurrency();
  if (threads_ < 1)
    threads_ = 1;
}

std::string CpuBackend::name() const {
  return "cpu";
}

const fusion::IoFusionGate* CpuBackend::io_fusion_gate() const {
  return opts_.use_io_gate ? &gate_ : nullptr;
}

const ir::ClaimSet& CpuBackend::claims() const {
  return cpu_claims(opts_.elementwise_regions);
}

std::int64_t CpuBackend::alignment() const {
  return 64;
}

std::int64_t CpuBackend::scratch_bytes(const ir::Graph& g, ir::NodeId id) const {
  const ir::Node& n = g.node(id);
  if (ir::is_leaf(n.op) || !n.shape.is_static() || n.shape.bytes() == 0 ||
      !claims().supports(g, id) || compile::is_pure_view(g, id))
    return 0;
  NodeView view{g, id, opts_, threads_};
  const KernelImpl* impl = select_kernel(view);
  return impl && impl->scratch ? impl->scratch(view) : 0;
}

std::unique_ptr<compile::Executable> CpuBackend::compile(const ir::Module& lir) const {
  return std::make_unique<CpuExecutable>(lir, *this);
}

std::unique_ptr<compile::Executable>
CpuBackend::compile_with_weights(const ir::Module& lir,
                                 std::shared_ptr<compile::WeightRegion> weights) const {
  return std::make_unique<CpuExecutable>(lir, *this, std::move(weights));
}

std::unique_ptr<compile::Backend> make_cpu_backend(const CpuOptions& opts) {
  return std::make_unique<CpuBackend>(opts);
}

namespace {
template <class E> auto* as_cpu(E& exe, const char* who) {
  using T = std::conditional_t<std::is_const_v<E>, const CpuExecutable, CpuExecutable>;
  auto* cpu = dynamic_cast<T*>(&exe);
  if (!cpu)
    throw Error(std::string(who) + ": the executable was not compiled by the CPU backend");
  return cpu;
}
} // namespace

std::string kernel_listing(const compile::Executable& exe) {
  return as_cpu(exe, "kernel_listing")->listing();
}

void set_kernel_profiling(compile::Executable& exe, bool on) {
  as_cpu(exe, "set_kernel_profiling")->set_profiling(on);
}

std::string kernel_profile(const compile::Executable& exe) {
  return as_cpu(exe, "kernel_profile")->profile();
}

compile::KernelTimings kernel_timings(const compile::Executable& exe) {
  return as_cpu(exe, "kernel_timings")->timings();
}

CompileBreakdown compile_breakdown(const compile::Executable& exe) {
  return as_cpu(exe, "compile_breakdown")->breakdown();
}

} // namespace rlx::cpu
