// kernels_bench.cpp: Google Benchmark micro-benchmarks of the CPU backend's hot kernels at BERT
// and LLaMA sizes: MatMul (oneDNN vs OpenBLAS), attention, LayerNorm and RMSNorm, and a 6-op
// elementwise chain unfused (one kernel per op) and fused (one ElementwiseRegion loop). Each
// benchmark compiles a one-op graph through the real pipeline and times Executable::execute(), so
// it measures exactly what a model run pays. Counters: GFLOP/s (MatMul, attention) or GB/s (norms).
//
// The machine these run on may be shared: use --benchmark_repetitions=N and read the median. The
// program re-executes itself with OMP_WAIT_POLICY=PASSIVE unless an OpenMP wait setting is given.
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/cpu/threading.hpp"
#include "rlx/ir/builder.hpp"

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <vector>

namespace {

using namespace rlx;

/// A compiled one-op graph with its inputs set.
struct Compiled {
  std::unique_ptr<cpu::CpuBackend> backend;
  std::unique_ptr<compile::Executable> exe;
};

/// The CPU backend with some op kinds unclaimed, so the pipeline decomposes them into primitives
/// (the "primitive path" an op's kernel is measured against).
class Unclaiming final : public compile::Backend {
public:
  Unclaiming(const cpu::CpuBackend& cpu, const std::vector<ir::OpKind>& ops)
      : cpu_(cpu), claims_(cpu.claims()) {
    for (ir::OpKind op : ops)
      claims_.unclaim(op);
  }
  std::string name() const override { return cpu_.name(); }
  const ir::ClaimSet& claims() const override { return claims_; }
  std::int64_t alignment() const override { return cpu_.alignment(); }
  std::int64_t scratch_bytes(const ir::Graph& g, ir::NodeId id) const override {
    return cpu_.scratch_bytes(g, id);
  }
  fusion::BroadcastPolicy broadcast_policy() const override { return cpu_.broadcast_policy(); }
  const fusion::IoFusionGate* io_fusion_gate() const override { return cpu_.io_fusion_gate(); }
  std::unique_ptr<compile::Executable> compile(const ir::Module& lir) const override {
    return cpu_.compile(lir);
  }

private:
  const cpu::CpuBackend& cpu_;
  ir::ClaimSet claims_;
};

Compiled compile_op(const cpu::CpuOptions& opts, const std::function<void(ir::Builder&)>& build,
                    bool fuse = true, const std::vector<ir::OpKind>& unclaim = {}) {
  ir::Graph g("bench");
  ir::Builder b(g);
  build(b);
  Compiled c;
  c.backend = std::make_unique<cpu::CpuBackend>(opts);
  compile::CompileOptions co;
  co.fold_constants = false;
  co.fuse = fuse;
  const Unclaiming backend(*c.backend, unclaim);
  c.exe = backend.compile(compile::CompilePipeline(backend, co).run(g).lir);
  for (bool param : {false, true})
    for (ir::NodeId id : param ? g.params() : g.inputs()) {
      ir::Tensor t(g.shape(id));
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set_f64(i, 0.001 * static_cast<double>(i % 1000) - 0.5);
      const std::string& name = g.node(id).attr<ir::LeafAttrs>().name;
      if (param)
        c.exe->set_param(name, t);
      else
        c.exe->set_input(name, t);
    }
  return c;
}

void run(benchmark::State& state, Compiled& c, double flops, double bytes) {
  for (auto _ : state)
    c.exe->execute();
  if (flops > 0)
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (bytes > 0)
    state.counters["GB/s"] =
        benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

cpu::CpuOptions options(const benchmark::State& state) {
  cpu::CpuOptions o;
  o.gemm = state.range(0) == 0 ? cpu::GemmProvider::onednn : cpu::GemmProvider::openblas;
  o.num_threads = static_cast<int>(state.range(1));
  return o;
}

/// x [M, K] · W[N, K]ᵀ: a linear layer with HuggingFace-layout weights (a Param, so oneDNN reads
/// it packed in its preferred layout).
void BM_MatMul(benchmark::State& state) {
  std::int64_t m = state.range(2), k = state.range(3), n = state.range(4);
  auto c = compile_op(options(state), [&](ir::Builder& b) {
    b.output(b.matmul(b.input("x", ir::Shape::of({m, k})), b.param("w", ir::Shape::of({n, k})),
                      false, true));
  });
  state.SetLabel(state.range(0) == 0 ? "onednn" : "openblas");
  run(state, c, 2.0 * static_cast<double>(m * n * k), 0);
}

void matmul_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"openblas", "threads", "M", "K", "N"});
  const std::int64_t shapes[][3] = {
      {128, 768, 768},   // BERT-base b1 s128: Q/K/V/O projections
      {128, 768, 3072},  // BERT-base FFN up
      {128, 3072, 768},  // BERT-base FFN down
      {1024, 768, 3072}, // BERT-base b8 s128 FFN up
      {128, 512, 1376},  // LLaMA (hidden 512) gate / up
      {128, 1376, 512},  // LLaMA down
  };
  for (std::int64_t provider : {0, 1})
    for (std::int64_t threads : {1, 2})
      for (const auto& s : shapes)
        b->Args({provider, threads, s[0], s[1], s[2]});
}
BENCHMARK(BM_MatMul)->Apply(matmul_args)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Attention on [B, S, H, D] with \p kv_heads and a mask kind (0 none, 1 causal).
void BM_Attention(benchmark::State& state) {
  std::int64_t batch = state.range(1), seq = state.range(2), heads = state.range(3),
               kv = state.range(4), d = 64;
  bool causal = state.range(5) == 1;
  cpu::CpuOptions o;
  o.num_threads = static_cast<int>(state.range(0));
  auto c = compile_op(o, [&](ir::Builder& b) {
    ir::AttentionAttrs a;
    a.num_heads = heads;
    a.num_kv_heads = kv;
    a.mask = causal ? ir::MaskKind::causal : ir::MaskKind::none;
    auto q = b.input("q", ir::Shape::of({batch, seq, heads, d}));
    auto k = b.input("k", ir::Shape::of({batch, seq, kv, d}));
    auto v = b.input("v", ir::Shape::of({batch, seq, kv, d}));
    b.output(b.attention(q, k, v, a));
  });
  // QKᵀ and PV: 4·B·H·S²·D (half of it under a causal mask).
  double flops = 4.0 * static_cast<double>(batch * heads * seq * seq * d) * (causal ? 0.5 : 1.0);
  run(state, c, flops, 0);
}
BENCHMARK(BM_Attention)
    ->ArgNames({"threads", "B", "S", "H", "KVH", "causal"})
    ->Args({1, 1, 128, 12, 12, 0}) // BERT-base b1 s128
    ->Args({2, 1, 128, 12, 12, 0})
    ->Args({2, 8, 128, 12, 12, 0}) // BERT-base b8 s128
    ->Args({1, 8, 128, 4, 4, 0})   // bert_mini b8 s128 (BM_AttentionGrad's shape)
    ->Args({2, 8, 128, 4, 4, 0})
    ->Args({1, 1, 128, 8, 2, 1}) // LLaMA hidden 512: 8 heads, 2 kv heads, causal
    ->Args({2, 1, 128, 8, 2, 1})
    ->Args({2, 1, 1024, 8, 2, 1}) // a long causal sequence
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// AttentionGrad (dq, dk, dv) on [B, S, H, D] with \p kv_heads and a mask kind (0 none, 1 causal):
/// the same shapes as BM_Attention, so the two compare directly (bert_mini b8 s128 among them).
/// "primitive" 1: the op unclaimed, so it runs as its decomposition (matmuls, softmax, sums).
void BM_AttentionGrad(benchmark::State& state) {
  std::int64_t batch = state.range(1), seq = state.range(2), heads = state.range(3),
               kv = state.range(4), d = 64;
  bool causal = state.range(5) == 1;
  cpu::CpuOptions o;
  o.num_threads = static_cast<int>(state.range(0));
  auto c = compile_op(
      o,
      [&](ir::Builder& b) {
        ir::AttentionAttrs a;
        a.num_heads = heads;
        a.num_kv_heads = kv;
        a.mask = causal ? ir::MaskKind::causal : ir::MaskKind::none;
        auto q = b.input("q", ir::Shape::of({batch, seq, heads, d}));
        auto k = b.input("k", ir::Shape::of({batch, seq, kv, d}));
        auto v = b.input("v", ir::Shape::of({batch, seq, kv, d}));
        auto out = b.input("out", ir::Shape::of({batch, seq, heads, d}));
        auto dout = b.input("dout", ir::Shape::of({batch, seq, heads, d}));
        const ir::NodeId g = b.op(ir::OpKind::AttentionGrad, {q, k, v, out, dout}, a);
        for (std::int64_t i = 0; i < 3; ++i)
          b.output(b.get(g, i));
      },
      true,
      state.range(6) == 1 ? std::vector<ir::OpKind>{ir::OpKind::AttentionGrad}
                          : std::vector<ir::OpKind>{});
  // QKᵀ, dO·Vᵀ, dS·K, dSᵀ·Q, Pᵀ·dO: 10·B·H·S²·D (half of it under a causal mask).
  double flops = 10.0 * static_cast<double>(batch * heads * seq * seq * d) * (causal ? 0.5 : 1.0);
  run(state, c, flops, 0);
}

BENCHMARK(BM_AttentionGrad)
    ->ArgNames({"threads", "B", "S", "H", "KVH", "causal", "primitive"})
    ->ArgsProduct({{1, 2}, {8}, {128}, {4}, {4}, {0}, {0, 1}}) // bert_mini b8 s128
    ->Args({2, 1, 128, 8, 2, 1, 0}) // LLaMA hidden 512: 8 heads, 2 kv heads, causal
    ->Args({2, 1, 128, 8, 2, 1, 1})
    ->Args({2, 1, 1024, 8, 2, 1, 0}) // a long causal sequence
    ->Args({2, 1, 1024, 8, 2, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// LayerNorm (oneDNN) or RMSNorm (ours) over [rows, d].
void BM_Norm(benchmark::State& state, bool rms) {
  std::int64_t rows = state.range(1), d = state.range(2);
  cpu::CpuOptions o;
  o.num_threads = static_cast<int>(state.range(0));
  auto c = compile_op(o, [&](ir::Builder& b) {
    auto x = b.input("x", ir::Shape::of({rows, d}));
    auto g = b.input("g", ir::Shape::of({d}));
    b.output(rms ? b.rms_norm(x, g, 1e-6)
                 : b.layer_norm(x, g, b.input("b", ir::Shape::of({d})), 1e-12));
  });
  run(state, c, 0, 2.0 * 4.0 * static_cast<double>(rows * d)); // read x, write y
}
void norm_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads", "rows", "d"});
  for (std::int64_t t : {1, 2}) {
    b->Args({t, 128, 768});  // BERT-base b1 s128
    b->Args({t, 1024, 768}); // BERT-base b8 s128
    b->Args({t, 128, 512});  // LLaMA hidden 512
    b->Args({t, 128, 4096}); // LLaMA-7B width
  }
}
BENCHMARK_CAPTURE(BM_Norm, layer_norm, false)
    ->Apply(norm_args)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Norm, rms_norm, true)
    ->Apply(norm_args)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// A 6-op elementwise chain over x [rows, cols] with a bias row, one kernel per op (fused = 0)
/// or one ElementwiseRegion (fused = 1). Chain 0: add, mul, sigmoid, mul, sub, relu (every op
/// vectorised in both forms); chain 1: add, mul, tanh, mul, gelu, sub (BERT-like, libm tanh /
/// erf in the region loop, oneDNN eltwise unfused).
void BM_ElementwiseChain(benchmark::State& state) {
  const std::int64_t rows = state.range(3), cols = state.range(4);
  const bool fused = state.range(1) != 0, bert = state.range(2) != 0;
  cpu::CpuOptions o;
  o.num_threads = static_cast<int>(state.range(0));
  o.elementwise_regions = fused;
  auto c = compile_op(
      o,
      [&](ir::Builder& b) {
        auto x = b.input("x", ir::Shape::of({rows, cols}));
        auto bias = b.input("bias", ir::Shape::of({cols}));
        auto y = b.mul(b.add(x, bias), b.scalar(0.5));
        y = bert ? b.tanh(y) : b.sigmoid(y);
        y = b.mul(y, x);
        y = bert ? b.sub(b.gelu(y), bias) : b.relu(b.sub(y, bias));
        b.output(y);
      },
      fused);
  state.SetLabel(std::string(bert ? "add,mul,tanh,mul,gelu,sub" : "add,mul,sigmoid,mul,sub,relu") +
                 (fused ? " region" : " 6 kernels"));
  run(state, c, 0, 2.0 * 4.0 * static_cast<double>(rows * cols)); // read x, write y
}
BENCHMARK(BM_ElementwiseChain)
    ->ArgNames({"threads", "fused", "bert", "rows", "cols"})
    ->ArgsProduct({{1, 2}, {0, 1}, {0, 1}, {128}, {3072}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

} // namespace

int main(int argc, char** argv) {
  rlx::cpu::reexec_with_threading_environment(argv); // passive OpenMP waiting (DESIGN.md)
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
