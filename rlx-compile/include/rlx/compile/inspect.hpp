// inspect.hpp: inspection of a compile: the text IR of every stage and readable reports.
#pragma once

#include "rlx/compile/legalize.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/fusion/pass.hpp"
#include "rlx/ir/module.hpp"

#include <string>
#include <vector>

namespace rlx::compile {

/// The text IR of one pipeline stage.
struct StageText {
  std::string stage;   ///< "input", then the pass name
  std::string text;    ///< rlx::ir::print of the graph after the stage
  bool changed = true; ///< whether the stage changed the graph (the input counts as changed)
};

/// Everything inspect_pipeline() gathered.
struct PipelineInspection {
  std::vector<StageText> stages; ///< the input and every graph stage, in run order
  CompileResult result;          ///< the compile itself (LIR, reports, timings)

  /// Every stage with a banner (unchanged stages say so instead of repeating their text), then
  /// the pass timings, the fusion report, the dispatch report and the memory plan summary.
  std::string str() const;
};

/// Compiles \p m for \p backend with \p opts, recording the text IR of every stage.
PipelineInspection inspect_pipeline(const Backend& backend, const ir::Module& m,
                                    CompileOptions opts = {});
/// Same as inspect_pipeline(backend, ir::Module::hir(g), opts).
PipelineInspection inspect_pipeline(const Backend& backend, const ir::Graph& g,
                                    CompileOptions opts = {});

/// "12.3 MiB" style byte counts (B, KiB, MiB, GiB with one decimal).
std::string format_bytes(std::int64_t bytes);
/// One line per pass: name, milliseconds, changed or not, node counts before -> after.
std::string format_pass_stats(const std::vector<fusion::PassStats>& stats);
/// The dispatch report (DispatchReport::str()).
std::string format_dispatch_report(const DispatchReport& report);
/// The memory plan summary: arena size against the lower bound (and the temporaries' share of
/// both, which is where placement quality shows), buffer counts per storage kind, scratch.
std::string format_memory_plan(const ir::MemoryPlan& plan);
/// A short summary of a compile: total time, node count, fusion, dispatch and memory figures.
std::string format_compile_summary(const CompileResult& result);

} // namespace rlx::compile
