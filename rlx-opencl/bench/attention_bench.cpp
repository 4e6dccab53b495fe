// attention_bench.cpp: the three OpenCL attention kernels (rows: one work-item per query row, K / V
// from global memory; tiled: 16-row work-groups with Q / K / V tiles in local memory; gpu: 64-item
// work-groups over 8 query rows, the keys and features split over the group) on the
// anchor workloads' attention shapes, back to back per shape (quote ratios within a shape: the
// machine may be shared). Each benchmark compiles a one-Attention graph (q, k, v [B, S, H, D],
// bshd) through the real pipeline and times Executable::execute() (every launch plus the wait).
// Counter: GFLOP/s of the two products (4·B·H·Sq·Sk·D, halved for causal). The results and the
// choice they led to: rlx-opencl/DESIGN.md, "Attention".
//
// Set POCL_CACHE_DIR to a writable folder when the device is pocl.
#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/opencl/backend.hpp"

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace {

using namespace rlx;

/// The OpenCL backend with attention kernel \p k (one backend per kernel, made once).
const opencl::OpenClBackend& backend(opencl::AttentionKernel k) {
  static std::map<opencl::AttentionKernel, std::unique_ptr<opencl::OpenClBackend>> made;
  auto& be = made[k];
  if (!be) {
    opencl::OpenClOptions o;
    o.attention = k;
    be = std::make_unique<opencl::OpenClBackend>(o);
  }
  return *be;
}

/// args: B, S, H, KVH, D, causal.
void attention(benchmark::State& state, opencl::AttentionKernel k) {
  const std::int64_t B = state.range(0), S = state.range(1), H = state.range(2),
                     KVH = state.range(3), D = state.range(4);
  const bool causal = state.range(5) != 0;
  const opencl::OpenClBackend& be = backend(k);
  state.SetLabel(be.device().name);
  ir::Graph g("attention");
  ir::Builder b(g);
  auto q = b.input("q", ir::Shape::of({B, S, H, D}));
  auto kk = b.input("k", ir::Shape::of({B, S, KVH, D}));
  auto v = b.input("v", ir::Shape::of({B, S, KVH, D}));
  ir::AttentionAttrs a;
  a.num_heads = H;
  a.num_kv_heads = KVH;
  a.mask = causal ? ir::MaskKind::causal : ir::MaskKind::none;
  a.layout = ir::AttnLayout::bshd;
  b.output(b.op(ir::OpKind::Attention, {q, kk, v}, a));
  auto exe = be.compile(compile::CompilePipeline(be).run(g).lir);
  for (ir::NodeId id : g.inputs()) {
    ir::Tensor t(g.shape(id));
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, 0.001 * static_cast<double>(i % 1000) - 0.5);
    exe->set_input(g.node(id).attr<ir::LeafAttrs>().name, t);
  }
  exe->execute(); // warm up (pocl compiles a kernel for its work-group size on first launch)
  for (auto _ : state)
    exe->execute();
  const double flops = 4.0 * static_cast<double>(B * H * S * S * D) * (causal ? 0.5 : 1.0);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

} // namespace

/// Per shape, rows, tiled and gpu back to back: bert_base (12 heads of 64) b1 / b8 at s128,
/// bert_mini (4 of 64) b8 s128, a LLaMA-like causal GQA (8 heads, 2 kv heads, 64) s128 / s512.
int main(int argc, char** argv) {
  const std::vector<std::vector<std::int64_t>> shapes = {{1, 128, 12, 12, 64, 0},
                                                         {8, 128, 12, 12, 64, 0},
                                                         {8, 128, 4, 4, 64, 0},
                                                         {1, 128, 8, 2, 64, 1},
                                                         {1, 512, 8, 2, 64, 1}};
  for (const auto& args : shapes)
    for (auto [name, k] : {std::pair{"rows", opencl::AttentionKernel::rows},
                           std::pair{"tiled", opencl::AttentionKernel::tiled},
                           std::pair{"gpu", opencl::AttentionKernel::gpu}})
      benchmark::RegisterBenchmark(name, [k](benchmark::State& st) { attention(st, k); })
          ->Args(args)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
