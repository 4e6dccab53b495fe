// inspect.cpp: inspect_pipeline and the report formatters.
#include "rlx/compile/inspect.hpp"

#include "rlx/ir/text.hpp"

#include <array>
#include <cstdio>
#include <sstream>

namespace rlx::compile {

PipelineInspection inspect_pipeline(const Backend& backend, const ir::Module& m,
                                    CompileOptions opts) {
  PipelineInspection out;
  CompilePipeline pipe(backend, std::move(opts));
  std::uint64_t last_hash = 0;
  pipe.set_observer([&](std::string_view stage, const ir::Graph& g) {
    const std::uint64_t h = g.hash();
    const bool changed = out.stages.empty() || h != last_hash;
    last_hash = h;
    out.stages.push_back(StageText{std::string(stage), ir::print(g), changed});
  });
  out.result = pipe.run(m);
  return out;
}

PipelineInspection inspect_pipeline(const Backend& backend, const ir::Graph& g,
                                    CompileOptions opts) {
  return inspect_pipeline(backend, ir::Module::hir(g), std::move(opts));
}

std::string PipelineInspection::str() const {
  std::ostringstream os;
  for (const auto& s : stages) {
    os << "==== " << s.stage << " ";
    for (std::size_t i = s.stage.size(); i < 70; ++i)
      os << '=';
    os << "\n";
    if (s.changed)
      os << s.text;
    else
      os << "(unchanged)\n";
  }
  os << "==== passes\n" << format_pass_stats(result.passes);
  os << "==== fusion (kernels " << result.kernels_before_fusion << " -> "
     << result.kernels_after_fusion << ")\n"
     << result.fusion.str();
  os << "==== dispatch\n" << format_dispatch_report(result.dispatch);
  os << "==== memory plan\n" << format_memory_plan(result.lir.plan());
  return os.str();
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr std::array<const char*, 4> units{"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < units.size()) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_pass_stats(const std::vector<fusion::PassStats>& stats) {
  std::ostringstream os;
  char line[160];
  double total = 0;
  for (const auto& s : stats) {
    std::snprintf(line, sizeof line, "  %-20s %9.3f ms  %-9s %6zu -> %zu nodes\n", s.name.c_str(),
                  s.ms, s.changed ? "changed" : "unchanged", s.nodes_before, s.nodes_after);
    os << line;
    total += s.ms;
  }
  std::snprintf(line, sizeof line, "  %-20s %9.3f ms\n", "total", total);
  os << line;
  return os.str();
}

std::string format_dispatch_report(const DispatchReport& report) {
  return report.str();
}

std::string format_memory_plan(const ir::MemoryPlan& plan) {
  std::ostringstream os;
  const std::int64_t temp_arena = plan.arena_size - plan.pinned_bytes;
  const std::int64_t temp_bound = plan.lower_bound - plan.pinned_bytes;
  os << "  arena        " << format_bytes(plan.arena_size) << " (" << plan.arena_size
     << " bytes)\n";
  os << "  lower bound  " << format_bytes(plan.lower_bound) << " (" << plan.lower_bound
     << " bytes, peak live)\n";
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, "%.3f",
                plan.lower_bound > 0
                    ? static_cast<double>(plan.arena_size) / static_cast<double>(plan.lower_bound)
                    : 1.0);
  os << "  arena / bound " << ratio << "\n";
  os << "  pinned       " << format_bytes(plan.pinned_bytes)
     << " (inputs, params, constants, outputs)\n";
  std::snprintf(ratio, sizeof ratio, "%.3f",
                temp_bound > 0 ? static_cast<double>(temp_arena) / static_cast<double>(temp_bound)
                               : 1.0);
  os << "  temporaries  " << format_bytes(temp_arena) << " placed for a peak of "
     << format_bytes(temp_bound) << " (ratio " << ratio << ")\n";
  std::array<int, 7> counts{};
  for (const auto& s : plan.assignments)
    ++counts[static_cast<std::size_t>(s.storage)];
  os << "  buffers     ";
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (counts[k] > 0)
      os << " " << ir::storage_name(static_cast<ir::Storage>(k)) << "=" << counts[k];
  os << "\n";
  std::int64_t scratch = 0;
  for (const auto& s : plan.scratch)
    scratch += s.bytes;
  os << "  scratch      " << plan.scratch.size() << " buffers, " << format_bytes(scratch) << "\n";
  os << "  alignment    " << plan.alignment << " bytes\n";
  return os.str();
}

std::string format_compile_summary(const CompileResult& result) {
  std::ostringstream os;
  char line[160];
  std::snprintf(line, sizeof line, "compiled '%s' in %.3f ms: %zu nodes\n",
                result.lir.graph().name().c_str(), result.total_ms, result.lir.graph().size());
  os << line;
  const DispatchCounts t = result.dispatch.total();
  os << "  dispatch: " << t.native << " native, " << t.rewritten << " rewritten, " << t.unsupported
     << " unsupported\n";
  os << "  fusion:   " << result.fusion.total_applied() << " applied, "
     << result.fusion.missed.size() << " missed, kernels " << result.kernels_before_fusion << " -> "
     << result.kernels_after_fusion << "\n";
  const auto& p = result.lir.plan();
  os << "  memory:   arena " << format_bytes(p.arena_size) << ", lower bound "
     << format_bytes(p.lower_bound) << "\n";
  return os.str();
}

} // namespace rlx::compile
