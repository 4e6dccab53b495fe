// fma_peak.cpp: the machine's f32 multiply-add peak, measured: independent FMA chains held in
// registers (no memory traffic), on the widest vector ISA the CPU has (AVX-512F, else AVX2 + FMA),
// on T threads at once. The ceiling no GEMM can pass; bench.py reports each row's GFLOP/s as a
// share of it.
//
// Build: g++ -O2 -pthread fma_peak.cpp -o fma_peak     Usage: fma_peak [threads=2] [seconds=0.3]
// Prints one line: `fma_peak threads=T isa=avx2 gflops=175.4` (the best of 5 rounds).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// 12 independent accumulators cover FMA latency (4-5 cycles) times two FMA pipes on the cores we
// meet; each iteration is 12 FMAs of one vector V.
constexpr int kChains = 12;

/// kChains multiply-add chains of vectors V for `iters` iterations; returns a lane of their sum.
/// Inlined into a function compiled for V's ISA (GNU C++ contracts a * b + c into one FMA).
template <class V> [[gnu::always_inline]] inline float chains(long iters) {
  V a[kChains];
  for (int i = 0; i < kChains; ++i)
    a[i] = V{} + 0.1f * static_cast<float>(i + 1);
  const V b = V{} + 0.999999f, c = V{} + 1e-7f;
  for (long k = 0; k < iters; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i)
      a[i] = a[i] * b + c;
  V s = a[0];
  for (int i = 1; i < kChains; ++i)
    s += a[i];
  return s[0];
}

using V8 = float __attribute__((vector_size(32)));
using V16 = float __attribute__((vector_size(64)));
__attribute__((target("avx2,fma"))) float chains_avx2(long iters) {
  return chains<V8>(iters);
}
__attribute__((target("avx512f"))) float chains_avx512(long iters) {
  return chains<V16>(iters);
}

} // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.3;
  __builtin_cpu_init();
  const bool wide = __builtin_cpu_supports("avx512f");
  if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    std::fprintf(stderr, "fma_peak: the CPU has neither AVX-512F nor AVX2 + FMA\n");
    return 1;
  }
  const int lanes = wide ? 16 : 8;
  auto chains = wide ? chains_avx512 : chains_avx2;
  // Iterations per thread that take about `seconds` at 3 GHz and two FMAs a cycle.
  const long iters = std::max(1000L, static_cast<long>(seconds * 3e9 * 2 / kChains));
  std::atomic<float> sink{0};
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] { sink.store(chains(iters), std::memory_order_relaxed); });
    for (auto& th : pool)
      th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * kChains * lanes * static_cast<double>(iters) * threads / s / 1e9);
  }
  std::printf("fma_peak threads=%d isa=%s gflops=%.1f\n", threads, wide ? "avx512" : "avx2", best);
  return sink.load() == 12345.0f ? 2 : 0;
}
