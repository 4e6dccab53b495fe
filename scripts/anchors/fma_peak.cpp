// fma_peak.cpp: the machine's f32 multiply-add peak, measured: independent FMA chains held in
// registers (no memory traffic), on the widest vector ISA the CPU has (AVX-512F, else AVX2 + FMA),
// on T threads at once. The ceiling no GEMM can pass; bench.py reports each row's GFLOP/s as a
// share of it.
//
// Build: g++ -O2 -pthread fma_peak.cpp -o fma_peak     Usage: fma_peak [threads=2] [seconds=0.3]
// Prints one line: `fma_peak threads=T isa=avx2 gflops=175.4` (the best of 5 rounds).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// 12 independent accumulators cover FMA latency (4-5 cycles) times two FMA pipes on the cores we
// meet; each iteration is 12 FMAs of `lanes` floats.
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) float chains_avx2(long iters) {
  __m256 a0 = _mm256_set1_ps(0.1f), a1 = _mm256_set1_ps(0.2f), a2 = _mm256_set1_ps(0.3f),
         a3 = _mm256_set1_ps(0.4f), a4 = _mm256_set1_ps(0.5f), a5 = _mm256_set1_ps(0.6f),
         a6 = _mm256_set1_ps(0.7f), a7 = _mm256_set1_ps(0.8f), a8 = _mm256_set1_ps(0.9f),
         a9 = _mm256_set1_ps(1.0f), a10 = _mm256_set1_ps(1.1f), a11 = _mm256_set1_ps(1.2f);
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (long k = 0; k < iters; ++k) {
    a0 = _mm256_fmadd_ps(a0, b, c), a1 = _mm256_fmadd_ps(a1, b, c);
    a2 = _mm256_fmadd_ps(a2, b, c), a3 = _mm256_fmadd_ps(a3, b, c);
    a4 = _mm256_fmadd_ps(a4, b, c), a5 = _mm256_fmadd_ps(a5, b, c);
    a6 = _mm256_fmadd_ps(a6, b, c), a7 = _mm256_fmadd_ps(a7, b, c);
    a8 = _mm256_fmadd_ps(a8, b, c), a9 = _mm256_fmadd_ps(a9, b, c);
    a10 = _mm256_fmadd_ps(a10, b, c), a11 = _mm256_fmadd_ps(a11, b, c);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f"))) float chains_avx512(long iters) {
  __m512 a0 = _mm512_set1_ps(0.1f), a1 = _mm512_set1_ps(0.2f), a2 = _mm512_set1_ps(0.3f),
         a3 = _mm512_set1_ps(0.4f), a4 = _mm512_set1_ps(0.5f), a5 = _mm512_set1_ps(0.6f),
         a6 = _mm512_set1_ps(0.7f), a7 = _mm512_set1_ps(0.8f), a8 = _mm512_set1_ps(0.9f),
         a9 = _mm512_set1_ps(1.0f), a10 = _mm512_set1_ps(1.1f), a11 = _mm512_set1_ps(1.2f);
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (long k = 0; k < iters; ++k) {
    a0 = _mm512_fmadd_ps(a0, b, c), a1 = _mm512_fmadd_ps(a1, b, c);
    a2 = _mm512_fmadd_ps(a2, b, c), a3 = _mm512_fmadd_ps(a3, b, c);
    a4 = _mm512_fmadd_ps(a4, b, c), a5 = _mm512_fmadd_ps(a5, b, c);
    a6 = _mm512_fmadd_ps(a6, b, c), a7 = _mm512_fmadd_ps(a7, b, c);
    a8 = _mm512_fmadd_ps(a8, b, c), a9 = _mm512_fmadd_ps(a9, b, c);
    a10 = _mm512_fmadd_ps(a10, b, c), a11 = _mm512_fmadd_ps(a11, b, c);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  return _mm512_reduce_add_ps(s);
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
