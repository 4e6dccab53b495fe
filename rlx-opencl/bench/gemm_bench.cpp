// gemm_bench.cpp: the OpenCL GEMM kernels (our tiled and rows kernels, CLBlast where rlx-opencl
// was built with it) against the CPU backend's oneDNN GEMM on the anchor workloads' shapes, every
// kernel of a shape back to back (quote ratios within a shape, not absolute figures: the machine
// may be shared). Each benchmark compiles a one-MatMul graph (x · Wᵀ, W a Param) through the real
// pipeline and times Executable::execute() (on OpenCL: every launch plus the wait for the queue).
// Counter: GFLOP/s. The results and the choice they led to: rlx-opencl/DESIGN.md, "GEMM".
//
// Set POCL_CACHE_DIR to a writable folder when the device is pocl.
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/opencl/backend.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <memory>

namespace {

using namespace rlx;

/// x [M, K] · W [N, K]ᵀ with W a Param, compiled for \p be, inputs set.
std::unique_ptr<compile::Executable> compile_gemm(const compile::Backend& be, std::int64_t M,
                                                  std::int64_t N, std::int64_t K) {
  ir::Graph g("gemm");
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape::of({M, K}));
  auto w = b.param("w", ir::Shape::of({N, K}));
  b.output(b.matmul(x, w, false, true));
  compile::CompileOptions co;
  co.fold_constants = false;
  auto exe = be.compile(compile::CompilePipeline(be, co).run(g).lir);
  for (bool param : {false, true})
    for (ir::NodeId id : param ? g.params() : g.inputs()) {
      ir::Tensor t(g.shape(id));
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set_f64(i, 0.001 * static_cast<double>(i % 1000) - 0.5);
      const std::string& name = g.node(id).attr<ir::LeafAttrs>().name;
      if (param)
        exe->set_param(name, t);
      else
        exe->set_input(name, t);
    }
  return exe;
}

void gemm(benchmark::State& state, const compile::Backend& be) {
  const std::int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  auto exe = compile_gemm(be, M, N, K);
  exe->execute(); // warm up (pocl compiles a kernel for its work-group size on first launch)
  for (auto _ : state)
    exe->execute();
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(M * N * K) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

/// The OpenCL backend with GEMM kernel \p k (one backend per kernel, made once).
const opencl::OpenClBackend& opencl_backend(opencl::GemmKernel k) {
  static std::map<opencl::GemmKernel, std::unique_ptr<opencl::OpenClBackend>> made;
  auto& be = made[k];
  if (!be) {
    opencl::OpenClOptions o;
    o.gemm = k;
    be = std::make_unique<opencl::OpenClBackend>(o);
  }
  return *be;
}

void opencl_tiled_gemm(benchmark::State& state) {
  state.SetLabel(opencl_backend(opencl::GemmKernel::tiled).device().name);
  gemm(state, opencl_backend(opencl::GemmKernel::tiled));
}

void opencl_rows_gemm(benchmark::State& state) {
  state.SetLabel(opencl_backend(opencl::GemmKernel::rows).device().name);
  gemm(state, opencl_backend(opencl::GemmKernel::rows));
}

void opencl_clblast_gemm(benchmark::State& state) {
  if (!opencl::have_clblast()) {
    state.SkipWithError("rlx-opencl was built without CLBlast");
    return;
  }
  state.SetLabel(opencl_backend(opencl::GemmKernel::clblast).device().name);
  gemm(state, opencl_backend(opencl::GemmKernel::clblast));
}

void cpu_gemm(benchmark::State& state) {
  static const cpu::CpuBackend be;
  gemm(state, be);
}

} // namespace

// The anchor workloads' products: rows M 1 / 8 (decode, MLP batches), 64 / 128 (prefill), and
// N x K of BERT-mini / BERT-base projections and FFNs. Registered shape by shape, every kernel of
// a shape back to back, so the kernels of one shape are timed under the same machine load.
int main(int argc, char** argv) {
  const std::pair<const char*, void (*)(benchmark::State&)> kernels[] = {
      {"opencl_tiled_gemm", opencl_tiled_gemm},
      {"opencl_rows_gemm", opencl_rows_gemm},
      {"opencl_clblast_gemm", opencl_clblast_gemm},
      {"cpu_gemm", cpu_gemm}};
  auto add = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    for (const auto& [name, fn] : kernels)
      benchmark::RegisterBenchmark(name, fn)
          ->Args({m, n, k})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  };
  for (std::int64_t m : {1, 8, 64, 128})
    for (auto [n, k] :
         {std::pair<std::int64_t, std::int64_t>{512, 512}, {768, 768}, {3072, 768}, {768, 3072}})
      add(m, n, k);
  // RLX_GEMM_BENCH_LARGE=1 (scripts/gpu-check.sh, on a GPU): BERT-base b8 s128's products (1024
  // rows) and square products up to 4096, where a GPU approaches its peak.
  if (const char* large = std::getenv("RLX_GEMM_BENCH_LARGE"); large && *large == '1') {
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{768, 768}, {3072, 768}, {768, 3072}})
      add(1024, n, k);
    for (std::int64_t s : {1024, 2048, 4096})
      add(s, s, s);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
