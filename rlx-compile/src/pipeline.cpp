// pipeline.cpp: CompilePipeline, the staged compile of a HIR / MIR module into LIR.
#include "rlx/compile/pipeline.hpp"

#include "rlx/compile/memory_plan.hpp"
#include "rlx/compile/passes.hpp"
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/verify.hpp"

#include <algorithm>
#include <chrono>

namespace rlx::compile {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
/// Nodes that run a kernel: not leaves, and not `get` (a view of a tuple part, aliased by the
/// planner: the tuple's own kernel wrote it).
int kernel_count(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node& node : g.nodes())
    n += ir::is_leaf(node.op) || node.op == ir::OpKind::Get ? 0 : 1;
  return n;
}
} // namespace

CompilePipeline::CompilePipeline(const Backend& backend, CompileOptions opts)
    : backend_(backend), opts_(std::move(opts)) {}

std::vector<std::string> CompilePipeline::pass_names() const {
  std::vector<std::string> names{std::string(LowerHirPass::kName)};
  if (!opts_.specialize_params.empty())
    names.emplace_back(SpecializeParamsPass::kName);
  if (opts_.fold_constants)
    names.emplace_back(ConstFoldPass::kName);
  names.emplace_back(SimplifyPass::kName);
  names.emplace_back(CsePass::kName);
  if (opts_.fuse)
    for (auto& f : fusion::fusion_passes_for_supported(backend_.claims(), opts_.fusion))
      names.push_back(std::move(f));
  // Symbols are bound before legalisation: decompositions that build constant tables (causal
  // masks, RoPE's cos / sin) need static sequence lengths.
  names.emplace_back(BindSymbolsPass::kName);
  names.emplace_back(LegalizePass::kName);
  if (backend_.broadcast_policy() != fusion::BroadcastPolicy::implicit)
    names.emplace_back(LegalizeBroadcastPass::kName);
  names.emplace_back(DcePass::kName);
  names.emplace_back("memory-plan");
  return names;
}

void CompilePipeline::verify_input(const ir::Graph& g) const {
  try {
    ir::verify(g);
  } catch (const ir::VerifyError& e) {
    throw ir::VerifyError("compile of graph '" + g.name() + "' for backend '" + backend_.name() +
                          "': the input graph fails verification: " + e.what());
  }
}

CompileResult CompilePipeline::run(const ir::Graph& g) const {
  verify_input(g); // before Module::hir, which verifies too, so the message says where it failed
  return run(ir::Module::hir(g));
}

CompileResult CompilePipeline::run(const ir::Module& m) const {
  const auto t0 = Clock::now();
  if (m.stage() == ir::Stage::lir)
    throw Error("CompilePipeline: module '" + m.graph().name() +
                "' is already LIR; compile its MIR instead");
  ir::Graph g = m.graph();
  verify_input(g);

  CompileResult r;
  fusion::PassContext ctx;
  ctx.claims = &backend_.claims();
  ctx.report = &r.fusion;
  ctx.io_gate = backend_.io_fusion_gate();
  ctx.backend = backend_.name();
  ctx.options.broadcast = backend_.broadcast_policy();
  ctx.specialize_params = &opts_.specialize_params;
  ctx.bindings = &opts_.bindings;

  fusion::check_fusion_options(opts_.fusion);
  const auto fusion_names = fusion::fusion_passes_for_supported(backend_.claims(), opts_.fusion);
  auto is_fusion = [&](std::string_view name) {
    return opts_.fuse &&
           std::find(fusion_names.begin(), fusion_names.end(), name) != fusion_names.end();
  };
  // Kernel counts around the fusion passes: the count after the stage before the first fusion
  // pass, and after each fusion pass.
  int last = 0;
  bool fused_yet = false;
  fusion::PassManagerOptions pmo = fusion::PassManagerOptions::from_env();
  pmo.observer = [&](std::string_view stage, const ir::Graph& gg) {
    const int k = kernel_count(gg);
    if (is_fusion(stage)) {
      if (!fused_yet)
        r.kernels_before_fusion = last;
      fused_yet = true;
      r.kernels_after_fusion = k;
    } else if (!fused_yet) {
      r.kernels_before_fusion = r.kernels_after_fusion = k;
    }
    last = k;
    if (observer_)
      observer_(stage, gg);
  };
  fusion::PassManager pm(std::move(pmo));
  const fusion::PassRegistry registry = default_pass_registry();
  std::vector<std::string> names = pass_names();
  names.pop_back(); // "memory-plan" is not a graph pass
  for (const auto& name : names) {
    if (name == LegalizePass::kName)
      pm.add(std::make_unique<LegalizePass>(&r.dispatch));
    else
      pm.add(registry, name);
  }
  // In-place updates name an output index and a Param, which the passes keep (they preserve
  // the interface); graphs rebuilt by a pass start without them, so they are restored here.
  std::vector<ir::OutputAlias> aliases(g.aliases().begin(), g.aliases().end());
  pm.run(g, ctx);
  g.set_aliases(std::move(aliases));

  try {
    ir::verify(g, ir::VerifyOptions{.allow_hir = false});
  } catch (const ir::VerifyError& e) {
    throw ir::VerifyError("compile of graph '" + g.name() + "' for backend '" + backend_.name() +
                          "': the optimised graph fails verification: " + e.what());
  }

  const auto tp = Clock::now();
  PlanOptions po;
  po.alignment = backend_.alignment();
  po.scratch_bytes = [this](const ir::Graph& gg, ir::NodeId id) {
    return backend_.scratch_bytes(gg, id);
  };
  ir::MemoryPlan plan = plan_memory(g, po);
  r.passes = pm.stats();
  r.passes.push_back(fusion::PassStats{"memory-plan", ms_since(tp), false, g.size(), g.size()});
  r.lir = ir::Module::lir(std::move(g), std::move(plan));
  r.total_ms = ms_since(t0);
  return r;
}

} // namespace rlx::compile
