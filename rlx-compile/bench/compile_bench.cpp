// compile_bench.cpp: compile time of the whole CompilePipeline (lower HIR, fold, simplify, CSE,
// legalise, DCE, bind, memory plan) on the acceptance workloads of the compile testing library
// (tests/testing/workloads.hpp: BERT-base, LLaMA, MLP), for a
// backend that claims every op and for one that needs legalisation of the composite ops.
//
//   rlx_compile_compile_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
//
// reports the median wall time per compile (the goal for BERT-base is well under 100 ms).
#include "rlx/compile/pipeline.hpp"
#include "testing/compile_testing.hpp"

#include <benchmark/benchmark.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using rlx::compile::CompileOptions;
using rlx::compile::CompilePipeline;

/// A backend that only claims; the benchmark never asks it for an executable.
class ClaimOnlyBackend : public rlx::compile::Backend {
public:
  ClaimOnlyBackend(std::string name, std::initializer_list<rlx::ir::OpKind> unclaimed)
      : name_(std::move(name)), claims_(rlx::compile::testing::claim_all_but(unclaimed)) {}
  std::string name() const override { return name_; }
  const rlx::ir::ClaimSet& claims() const override { return claims_; }
  std::unique_ptr<rlx::compile::Executable> compile(const rlx::ir::Module&) const override {
    throw std::logic_error("compile_bench backends do not run graphs");
  }

private:
  std::string name_;
  rlx::ir::ClaimSet claims_;
};

const ClaimOnlyBackend& full_backend() {
  static const ClaimOnlyBackend b("full", {});
  return b;
}

const ClaimOnlyBackend& subset_backend() {
  using rlx::ir::OpKind;
  static const ClaimOnlyBackend b("subset", {OpKind::LayerNorm, OpKind::RmsNorm, OpKind::Softmax,
                                             OpKind::Gelu, OpKind::Silu, OpKind::Sigmoid});
  return b;
}

/// The acceptance workload called \p name (built once).
const rlx::compile::testing::Workload& workload(std::string_view name) {
  static const std::vector<rlx::compile::testing::Workload> all =
      rlx::compile::testing::acceptance_workloads();
  for (const auto& w : all)
    if (w.name == name)
      return w;
  throw std::logic_error("compile_bench: no workload '" + std::string(name) + "'");
}

/// Compiles the acceptance workload \p name (HIR, at its measured sizes) for \p backend.
void run_compile(benchmark::State& state, std::string_view name,
                 const rlx::compile::Backend& backend) {
  const rlx::ir::Graph& hir = workload(name).hir;
  CompileOptions o;
  o.bindings = workload(name).sizes;
  CompilePipeline pipe(backend, o);
  std::size_t nodes = 0;
  std::int64_t arena = 0;
  for (auto _ : state) {
    rlx::compile::CompileResult r = pipe.run(hir);
    nodes = r.lir.graph().size();
    arena = r.lir.plan().arena_size;
    benchmark::DoNotOptimize(r);
  }
  state.counters["mir_nodes"] = static_cast<double>(nodes);
  state.counters["arena_MiB"] = static_cast<double>(arena) / (1024.0 * 1024.0);
}

void BM_CompileBertBase(benchmark::State& state) {
  run_compile(state, "bert-base", full_backend());
}
BENCHMARK(BM_CompileBertBase)->Unit(benchmark::kMillisecond);

void BM_CompileBertBaseLegalised(benchmark::State& state) {
  run_compile(state, "bert-base", subset_backend());
}
BENCHMARK(BM_CompileBertBaseLegalised)->Unit(benchmark::kMillisecond);

void BM_CompileLlama4(benchmark::State& state) {
  run_compile(state, "llama", full_backend());
}
BENCHMARK(BM_CompileLlama4)->Unit(benchmark::kMillisecond);

void BM_CompileMlp(benchmark::State& state) {
  run_compile(state, "mlp", full_backend());
}
BENCHMARK(BM_CompileMlp)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
