// fold_cost.cpp: what one constant fold costs in the reference interpreter (the figures behind
// PassOptions::fold_max_work, see rlx-compile/DESIGN.md): MatMul folds of square f32 constants at
// several sizes and an elementwise Add, each timed per fold and divided by its estimated work
// (M*N*K multiply-adds, or elements read and written).
//
//   rlx_compile_fold_cost --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <benchmark/benchmark.h>

#include <vector>

namespace {

using rlx::ir::Shape;
using rlx::ir::Tensor;

Tensor filled(const std::vector<std::int64_t>& sizes) {
  Tensor t(Shape::of(sizes));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, static_cast<double>(i % 13) * 0.125 - 0.75);
  return t;
}

void BM_FoldMatMul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rlx::ir::Graph g("fold");
  rlx::ir::Builder b(g);
  const std::vector<Tensor> args = {filled({n, n}), filled({n, n})};
  rlx::ir::NodeId m = b.matmul(b.constant(args[0]), b.constant(args[1]));
  const rlx::ir::Node node = g.node(m);
  for (auto _ : state)
    benchmark::DoNotOptimize(rlx::ir::reference::evaluate_node(node, args));
  state.counters["work"] = static_cast<double>(n * n * n);
  state.counters["ns_per_work"] = benchmark::Counter(static_cast<double>(n * n * n),
                                                     benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}
BENCHMARK(BM_FoldMatMul)->Arg(32)->Arg(64)->Arg(128)->Arg(256)->Unit(benchmark::kMillisecond);

void BM_FoldAdd(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rlx::ir::Graph g("fold");
  rlx::ir::Builder b(g);
  const std::vector<Tensor> args = {filled({n}), filled({n})};
  rlx::ir::NodeId a = b.add(b.constant(args[0]), b.constant(args[1]));
  const rlx::ir::Node node = g.node(a);
  for (auto _ : state)
    benchmark::DoNotOptimize(rlx::ir::reference::evaluate_node(node, args));
  state.counters["work"] = static_cast<double>(3 * n);
  state.counters["ns_per_work"] =
      benchmark::Counter(static_cast<double>(3 * n), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}
BENCHMARK(BM_FoldAdd)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
