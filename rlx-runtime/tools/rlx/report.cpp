// report.cpp: summaries and statistics printed by the rlx subcommands.
#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <unistd.h>

namespace rlx::cli {

std::string format_bytes(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 1 ? "%.3f ms" : ms < 100 ? "%.2f ms" : "%.1f ms", ms);
  return buf;
}

Latency latency_of(std::vector<double> s) {
  std::sort(s.begin(), s.end());
  Latency l;
  l.runs = static_cast<int>(s.size());
  l.min = s.front();
  l.max = s.back();
  const std::size_t n = s.size();
  l.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  for (double v : s)
    l.mean += v / static_cast<double>(n);
  return l;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void print_pipeline_summary(std::ostream& out, const runtime::VariantInfo& v) {
  const compile::CompileResult& r = v.compiled->result;
  out << "compile:  " << format_ms(v.compiled->pipeline_ms) << " pipeline"
      << (v.cache_hit ? " (compile-cache hit)" : "") << " + " << format_ms(v.backend_ms)
      << " backend\n";
  out << "passes:  ";
  for (const auto& p : r.passes) {
    out << " " << p.name << " " << format_ms(p.ms);
    if (p.nodes_before != p.nodes_after)
      out << " (" << p.nodes_before << "->" << p.nodes_after << " nodes)";
    out << (&p == &r.passes.back() ? "" : ",");
  }
  out << "\n";
  out << "fusions:  ";
  if (r.fusion.applied.empty()) {
    out << "none applied";
  } else {
    bool first = true;
    for (const auto& [pattern, n] : r.fusion.applied) {
      out << (first ? "" : ", ") << pattern << " x" << n;
      first = false;
    }
  }
  if (!r.fusion.missed.empty()) {
    std::size_t unprofitable = 0;
    for (const fusion::MissedFusion& m : r.fusion.missed)
      unprofitable += m.reason == fusion::MissReason::not_profitable;
    out << "; " << r.fusion.missed.size() << " missed";
    if (unprofitable)
      out << ", " << unprofitable << " of them not profitable (IO gate)";
    out << " (rlx inspect lists them)";
  }
  out << "; kernels " << r.kernels_before_fusion << " -> " << r.kernels_after_fusion
      << " by fusion\n";
  const auto t = r.dispatch.total();
  out << "dispatch: " << t.native << " nodes native, " << t.rewritten << " rewritten, "
      << t.unsupported << " unsupported on " << r.dispatch.backend << "\n";
  const ir::MemoryPlan& plan = r.lir.plan();
  out << "memory:   arena " << format_bytes(plan.arena_size) << ", lower bound "
      << format_bytes(plan.lower_bound);
  if (plan.lower_bound > 0)
    out << " (" << std::fixed << std::setprecision(3)
        << static_cast<double>(plan.arena_size) / static_cast<double>(plan.lower_bound) << "x)"
        << std::defaultfloat;
  out << ", device " << format_bytes(v.device_bytes) << "\n";
}

std::int64_t param_count(const ir::Graph& g) {
  std::int64_t n = 0;
  for (ir::NodeId id : g.params())
    n += g.shape(id).numel();
  return n;
}

Progress::Progress(std::string label, int total, bool enabled)
    : label_(std::move(label)), total_(total), active_(enabled && isatty(STDERR_FILENO) != 0) {
  update(0);
}

Progress::~Progress() {
  if (active_)
    std::fprintf(stderr, "\r\033[K");
}

void Progress::update(int done) {
  if (!active_ || total_ <= 0)
    return;
  constexpr int width = 30;
  const int filled = done * width / total_;
  std::fprintf(stderr, "\r%s [%.*s%*s] %d/%d", label_.c_str(), filled,
               "##############################", width - filled, "", done, total_);
  std::fflush(stderr);
}

} // namespace rlx::cli
