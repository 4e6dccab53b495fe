// memory_plan_report.cpp: arena size against the lower bound (best fit and first fit) on the
// BERT-base, LLaMA and MLP graphs. A report, not a test: it prints figures and checks each plan.
#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/error.hpp"
#include "testing/workloads.hpp"

#include <chrono>
#include <cstdio>
#include <exception>

namespace {

double mib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

double ratio(std::int64_t a, std::int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

} // namespace

int main() {
  using rlx::compile::PlanOptions;
  try {
    std::printf("memory plan report (alignment 64; 'temps' = the shared region, arena minus the "
                "pinned params / constants / inputs / outputs)\n\n");
    std::printf("%-10s %6s %10s | %12s %12s %7s | %12s %12s %7s | %12s %7s | %8s\n", "graph",
                "nodes", "pinned", "temps arena", "temps lower", "ratio", "arena", "lower bound",
                "ratio", "first-fit", "ratio", "plan ms");
    std::printf("%-10s %6s %10s | %12s %12s %7s | %12s %12s %7s | %12s %7s | %8s\n", "", "", "MiB",
                "MiB", "MiB", "", "MiB", "MiB", "", "temps MiB", "", "");
    for (const auto& w : rlx::compile::testing::acceptance_workloads()) {
      auto t0 = std::chrono::steady_clock::now();
      rlx::ir::MemoryPlan best = rlx::compile::plan_memory(w.mir);
      auto t1 = std::chrono::steady_clock::now();
      PlanOptions ff;
      ff.strategy = PlanOptions::Strategy::first_fit;
      rlx::ir::MemoryPlan first = rlx::compile::plan_memory(w.mir, ff);
      rlx::compile::check_memory_plan(w.mir, best);
      rlx::compile::check_memory_plan(w.mir, first);
      const std::int64_t temps = best.arena_size - best.pinned_bytes;
      const std::int64_t lower = best.lower_bound - best.pinned_bytes;
      const std::int64_t ff_temps = first.arena_size - first.pinned_bytes;
      std::printf("%-10s %6zu %10.2f | %12.3f %12.3f %7.4f | %12.2f %12.2f %7.4f | %12.3f %7.4f | "
                  "%8.2f\n",
                  w.name.c_str(), w.mir.size(), mib(best.pinned_bytes), mib(temps), mib(lower),
                  ratio(temps, lower), mib(best.arena_size), mib(best.lower_bound),
                  ratio(best.arena_size, best.lower_bound), mib(ff_temps), ratio(ff_temps, lower),
                  std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    // Random DAGs: small graphs where placement order matters more than in a transformer stack.
    std::int64_t lower = 0, best = 0, first = 0;
    int best_wins = 0, first_wins = 0;
    const std::uint32_t seeds = 2000;
    for (std::uint32_t seed = 0; seed < seeds; ++seed) {
      rlx::ir::Graph g = rlx::compile::testing::random_graph(seed);
      PlanOptions ff;
      ff.strategy = PlanOptions::Strategy::first_fit;
      rlx::ir::MemoryPlan b = rlx::compile::plan_memory(g);
      rlx::ir::MemoryPlan f = rlx::compile::plan_memory(g, ff);
      lower += b.lower_bound - b.pinned_bytes;
      best += b.arena_size - b.pinned_bytes;
      first += f.arena_size - f.pinned_bytes;
      best_wins += b.arena_size < f.arena_size;
      first_wins += f.arena_size < b.arena_size;
    }
    std::printf("\nrandom DAGs (%u seeds, temporaries summed): lower bound %lld B, best fit %lld B "
                "(ratio %.4f), first fit %lld B (ratio %.4f); best fit smaller on %d graphs, "
                "first fit on %d\n",
                seeds, static_cast<long long>(lower), static_cast<long long>(best),
                ratio(best, lower), static_cast<long long>(first), ratio(first, lower), best_wins,
                first_wins);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memory_plan_report: %s\n", e.what());
    return 1;
  }
  return 0;
}
