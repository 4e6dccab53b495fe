// gemm_bench.cpp: GFLOP/s of one product per GEMM provider (oneDNN, OpenBLAS, rlx's packed GEMM),
// each shape compiled as a one-product executable per provider and timed in interleaved rounds
// (provider order rotated every round; the median of the rounds' medians is reported), so a
// loaded machine slows every provider alike.
//
//   rlx_cpu_gemm_bench [--threads N] [--rounds R] [--reps K] [--cores] [--list] [--shape NAME]
//
// --cores adds each provider's CPU seconds per wall second (how many cores it kept busy); --list
// prints each executable's kernel listing.
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace rlx;

struct Shape {
  const char* what;
  std::int64_t m, k, n;
  bool ta = false, tb = false;
  const char* epilogue = ""; ///< "", "relu" or "gelu" (with a bias)
  bool weight = true;        ///< B is a Param (else an input, as dY in Xᵀ·dY)
};

ir::Tensor random_tensor(const ir::Shape& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  ir::Tensor t(s);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, u(rng));
  return t;
}

ir::Graph product(const Shape& s) {
  ir::Graph g("gemm");
  ir::Builder b(g);
  const ir::NodeId x = b.input("x", s.ta ? ir::Shape({s.k, s.m}) : ir::Shape({s.m, s.k}));
  const ir::Shape ws = s.tb ? ir::Shape({s.n, s.k}) : ir::Shape({s.k, s.n});
  const ir::NodeId w = s.weight ? b.param("w", ws) : b.input("w", ws);
  ir::NodeId y = b.matmul(x, w, s.ta, s.tb);
  const std::string e = s.epilogue;
  if (!e.empty()) {
    y = b.add(y, b.param("bias", ir::Shape({s.n})));
    y = e == "relu" ? b.relu(y) : b.gelu(y);
  }
  b.output(y);
  return g;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 7, reps = 15;
  bool cores = false, list = false;
  std::string only; ///< --shape: only the shapes whose name contains it
  auto fail = [](const std::string& what) {
    std::fprintf(stderr, "rlx_cpu_gemm_bench: %s\n", what.c_str());
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list" || a == "--cores") {
      (a == "--list" ? list : cores) = true;
      continue;
    }
    if (a != "--threads" && a != "--rounds" && a != "--reps" && a != "--shape")
      return fail("unknown argument '" + a +
                  "' (known: --threads N, --rounds R, --reps K, --cores, --list, --shape NAME)");
    if (i + 1 >= argc)
      return fail(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--shape") {
      only = v;
      continue;
    }
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(v, &used);
      if (used != v.size())
        n = 0;
    } catch (const std::exception&) {}
    if (n < 1 || n > 1000)
      return fail(a + " takes a whole number from 1 to 1000, not '" + v + "'");
    (a == "--threads" ? threads : a == "--rounds" ? rounds : reps) = n;
  }
  const std::vector<Shape> shapes = {
      {"mlp fwd 1", 64, 784, 512, false, false, "relu"},
      {"mlp fwd 2", 64, 512, 512, false, false, "relu"},
      {"mlp head", 64, 512, 10, false, true},
      {"bert qkv", 128, 256, 768, false, true},
      {"bert ffn up", 128, 256, 1024, false, true, "gelu"},
      {"bert ffn down", 128, 1024, 256, false, true},
      {"bert b8 qkv", 1024, 256, 768, false, true},
      {"bert-base qkv", 128, 768, 2304, false, true},
      {"bert-base ffn up", 128, 768, 3072, false, true, "gelu"},
      {"bert-base ffn down", 128, 3072, 768, false, true},
      {"mlp dW1 X^T.dY", 784, 64, 512, true, false, "", false},
      {"mlp dW2 X^T.dY", 512, 64, 512, true, false, "", false},
      {"mlp dX2 dY.W^T", 64, 512, 512, false, true},
      {"mlp dX3 dY.W^T", 64, 10, 512, false, true},
      {"llama qkv", 128, 512, 1536, false, true},
      {"llama gate", 128, 512, 1376, false, true, "silu"},
      {"llama up", 128, 512, 1376, false, true},
      {"llama gate+up", 128, 512, 2752, false, true},
      {"llama down", 128, 1376, 512, false, true},
  };
  if (!only.empty() && std::none_of(shapes.begin(), shapes.end(), [&](const Shape& s) {
        return std::string(s.what).find(only) != std::string::npos;
      })) {
    std::string names;
    for (const Shape& s : shapes)
      names += std::string(names.empty() ? "" : ", ") + s.what;
    return fail("no shape's name contains '" + only + "' (shapes: " + names + ")");
  }
  const cpu::GemmProvider providers[] = {cpu::GemmProvider::onednn, cpu::GemmProvider::openblas,
                                         cpu::GemmProvider::packed};
  std::printf("%-16s %5s %5s %5s %3s  %9s %9s %9s   (GFLOP/s, %d threads, median of %d rounds)\n",
              "shape", "M", "K", "N", "tr", "onednn", "openblas", "packed", threads, rounds);
  for (const Shape& s : shapes) {
    if (!only.empty() && std::string(s.what).find(only) == std::string::npos)
      continue;
    const ir::Graph g = product(s);
    std::vector<std::unique_ptr<compile::Executable>> exes;
    std::vector<std::unique_ptr<cpu::CpuBackend>> backends;
    for (auto p : providers) {
      backends.push_back(std::make_unique<cpu::CpuBackend>(cpu::CpuOptions{p, threads}));
      auto exe = backends.back()->compile(compile::CompilePipeline(*backends.back()).run(g).lir);
      std::uint64_t seed = 1;
      for (ir::NodeId id : g.inputs())
        exe->set_input(g.node(id).attr<ir::LeafAttrs>().name,
                       random_tensor(g.node(id).shape, seed++));
      for (ir::NodeId id : g.params())
        exe->set_param(g.node(id).attr<ir::LeafAttrs>().name,
                       random_tensor(g.node(id).shape, seed++));
      exe->execute(); // warm-up (first touch, packing)
      if (list)
        std::printf("%s", cpu::kernel_listing(*exe).c_str());
      exes.push_back(std::move(exe));
    }
    std::vector<std::vector<double>> per(exes.size());
    std::vector<double> cpu_s(exes.size()), wall_s(exes.size());
    for (int r = 0; r < rounds; ++r)
      for (std::size_t q = 0; q < exes.size(); ++q) {
        const std::size_t i = (q + static_cast<std::size_t>(r)) % exes.size();
        std::vector<double> t;
        exes[i]->execute();
        const std::clock_t c0 = std::clock();
        const auto w0 = std::chrono::steady_clock::now();
        for (int k = 0; k < reps; ++k) {
          const auto t0 = std::chrono::steady_clock::now();
          exes[i]->execute();
          t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        cpu_s[i] += static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        wall_s[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
        per[i].push_back(median(t));
      }
    const double flops = 2.0 * static_cast<double>(s.m * s.k * s.n);
    std::printf("%-16s %5lld %5lld %5lld %1s%1s%1s ", s.what, static_cast<long long>(s.m),
                static_cast<long long>(s.k), static_cast<long long>(s.n), s.ta ? "A" : "-",
                s.tb ? "B" : "-", s.epilogue[0] ? "e" : "-");
    for (auto& v : per)
      std::printf(" %9.1f", flops / median(v) / 1e9);
    if (cores) // CPU seconds per wall second while each provider ran (its cores' share)
      for (std::size_t i = 0; i < per.size(); ++i)
        std::printf(" %4.2f", cpu_s[i] / wall_s[i]);
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
