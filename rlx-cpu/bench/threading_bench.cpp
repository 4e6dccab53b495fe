// threading_bench.cpp: latency of a BERT-like encoder on the CPU backend, to compare how the
// thread pools share the cores (run it under different OMP_WAIT_POLICY / GOMP_SPINCOUNT settings:
// libgomp reads them when it loads, so they must be set before the program starts).
//
//   rlx_cpu_threading_bench [--gemm auto|onednn|openblas|packed] [--threads N]
//                           [--layers L] [--batch B] [--seq S] [--reps R] [--profile]
#include "bert_layer.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace rlx;
  cpu::CpuOptions opts;
  cpu::bench::BertConfig cfg;
  int reps = 20;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--gemm")
      opts.gemm = cpu::parse_gemm_provider(next());
    else if (a == "--threads")
      opts.num_threads = std::stoi(next());
    else if (a == "--layers")
      cfg.layers = std::stoll(next());
    else if (a == "--batch")
      cfg.batch = std::stoll(next());
    else if (a == "--seq")
      cfg.seq = std::stoll(next());
    else if (a == "--reps")
      reps = std::stoi(next());
    else if (a == "--profile")
      profile = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  ir::reference::TensorMap params;
  ir::Graph g = cpu::bench::bert_graph(cfg, params);
  cpu::CpuBackend backend(opts);
  auto lir = compile::CompilePipeline(backend).run(g).lir;
  auto exe = backend.compile(lir);
  for (const auto& [name, t] : params)
    exe->set_param(name, t);
  ir::Tensor x(ir::Shape::of({cfg.batch, cfg.seq, cfg.hidden}));
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x.set_f64(i, 0.01 * static_cast<double>(i % 97) - 0.4);
  exe->set_input("x", x);
  for (int i = 0; i < 3; ++i)
    exe->execute(); // warm-up: pools started, pages touched
  if (profile)
    cpu::set_kernel_profiling(*exe, true);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    exe->execute();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  auto env = [](const char* n) {
    const char* v = std::getenv(n);
    return v ? v : "unset";
  };
  std::printf("gemm=%s threads=%d OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s layers=%lld b=%lld s=%lld: "
              "median %.2f ms, min %.2f ms, max %.2f ms, %.1f GFLOP/s\n",
              std::string(cpu::gemm_provider_name(opts.gemm)).c_str(), backend.threads(),
              env("OMP_WAIT_POLICY"), env("GOMP_SPINCOUNT"), static_cast<long long>(cfg.layers),
              static_cast<long long>(cfg.batch), static_cast<long long>(cfg.seq), median,
              ms.front(), ms.back(), cpu::bench::bert_flops(cfg) / (median * 1e6));
  if (profile)
    std::printf("%s", cpu::kernel_profile(*exe).c_str());
  return 0;
}
