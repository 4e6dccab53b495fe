// report.hpp: what the rlx subcommands print: pipeline summaries, latency statistics, sizes,
// and a progress bar for long runs.
#pragma once

#include "rlx/runtime/runtime.hpp"

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

namespace rlx::cli {

/// "1.50 MiB", "512 B".
std::string format_bytes(std::int64_t bytes);
/// "3.14 ms" with a precision that suits the value.
std::string format_ms(double ms);

/// Latency statistics over repeated runs, in milliseconds.
struct Latency {
  double median = 0, min = 0, max = 0, mean = 0;
  int runs = 0;
};
/// Statistics of \p samples (milliseconds; must not be empty).
Latency latency_of(std::vector<double> samples);

/// Milliseconds elapsed since \p t0.
double ms_since(std::chrono::steady_clock::time_point t0);

/// Prints the compile summary of a variant: compile times, passes (time, node counts), fusions,
/// kernel dispatch totals, arena size against its lower bound.
void print_pipeline_summary(std::ostream& out, const runtime::VariantInfo& v);

/// The number of elements of every Param of \p g.
std::int64_t param_count(const ir::Graph& g);

/// A one-line progress bar on stderr, drawn only when stderr is a terminal.
class Progress {
public:
  /// A bar for \p total steps labelled \p label; \p enabled false draws nothing.
  Progress(std::string label, int total, bool enabled = true);
  ~Progress();
  /// Marks step \p done (1-based) complete.
  void update(int done);

private:
  std::string label_;
  int total_;
  bool active_;
};

} // namespace rlx::cli
