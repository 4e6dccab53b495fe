// handoff_bench.cpp: what a switch between the CPU backend's thread pools costs. A model run
// alternates our TBB kernels (norms, attention core, regions, OpenBLAS and the packed GEMM in TBB
// tasks) with oneDNN primitives on libgomp's OpenMP pool; this times one oneDNN product, one small
// TBB row kernel and the same product as OpenBLAS calls in TBB tasks, each after a call on its own
// pool and after a call on the other pool.
//
//   rlx_cpu_handoff_bench [--threads 2] [--reps 200] [--m 128 --k 512 --n 1376]
//
// It does not re-execute itself: run it under the OpenMP setting to measure (OMP_WAIT_POLICY /
// GOMP_SPINCOUNT are read by libgomp when it loads). Prints medians and the 10th percentile of
// each case in microseconds, the cases interleaved in rounds (the machine may be shared).
#include "rlx/cpu/threading.hpp"

#include <cblas.h>
#include <dnnl.hpp>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

/// oneDNN f32 matmul [m, k] x [k, n] on OpenMP, plain layouts.
struct OnednnGemm {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  std::vector<float> a, b, c;
  dnnl::matmul prim;
  dnnl::memory ma, mb, mc;
  OnednnGemm(long m, long k, long n)
      : a(static_cast<std::size_t>(m * k), 0.5f), b(static_cast<std::size_t>(k * n), 0.25f),
        c(static_cast<std::size_t>(m * n)) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc da({m, k}, dt::f32, tag::ab), db({k, n}, dt::f32, tag::ab),
        dc({m, n}, dt::f32, tag::ab);
    prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(da, db, dc), eng));
    ma = dnnl::memory(da, eng, a.data());
    mb = dnnl::memory(db, eng, b.data());
    mc = dnnl::memory(dc, eng, c.data());
  }
  void run() {
    prim.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    stream.wait();
  }
};

/// A row kernel like RMSNorm over [rows, d] on the TBB arena: two row tasks.
struct TbbRows {
  tbb::task_arena* arena;
  long rows, d;
  std::vector<float> x, y;
  TbbRows(tbb::task_arena* a, long r, long dd)
      : arena(a), rows(r), d(dd), x(static_cast<std::size_t>(r * dd), 1.5f),
        y(static_cast<std::size_t>(r * dd)) {}
  void run() {
    arena->execute([&] {
      tbb::parallel_for(tbb::blocked_range<long>(0, rows, rows / 2),
                        [&](const tbb::blocked_range<long>& r) {
                          for (long i = r.begin(); i < r.end(); ++i) {
                            const float* xi = x.data() + i * d;
                            float s = 0;
                            for (long j = 0; j < d; ++j)
                              s += xi[j] * xi[j];
                            const float inv = 1.0f / std::sqrt(s / static_cast<float>(d) + 1e-6f);
                            for (long j = 0; j < d; ++j)
                              y[static_cast<std::size_t>(i * d + j)] = xi[j] * inv;
                          }
                        });
    });
  }
};

/// The same product as OpenBLAS sgemm calls on one thread each, one per TBB task over column
/// halves (how rlx runs OpenBLAS: no pool of its own).
struct TbbBlas {
  tbb::task_arena* arena;
  long m, k, n;
  std::vector<float> a, b, c;
  TbbBlas(tbb::task_arena* ar, long mm, long kk, long nn)
      : arena(ar), m(mm), k(kk), n(nn), a(static_cast<std::size_t>(mm * kk), 0.5f),
        b(static_cast<std::size_t>(kk * nn), 0.25f), c(static_cast<std::size_t>(mm * nn)) {}
  void run() {
    arena->execute([&] {
      tbb::parallel_for(tbb::blocked_range<long>(0, 2, 1), [&](const tbb::blocked_range<long>& r) {
        for (long h = r.begin(); h < r.end(); ++h) {
          const long n0 = h * n / 2, n1 = (h + 1) * n / 2;
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                      static_cast<int>(n1 - n0), static_cast<int>(k), 1.0f, a.data(),
                      static_cast<int>(k), b.data() + n0, static_cast<int>(n), 0.0f, c.data() + n0,
                      static_cast<int>(n));
        }
      });
    });
  }
};

} // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 200;
  long m = 128, k = 512, n = 1376;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::atol(argv[i + 1]);
    if (a == "--threads")
      threads = static_cast<int>(v);
    else if (a == "--reps")
      reps = static_cast<int>(v);
    else if (a == "--m")
      m = v;
    else if (a == "--k")
      k = v;
    else if (a == "--n")
      n = v;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads")))
    fn(threads);
  tbb::task_arena arena(threads);
  OnednnGemm gemm(m, k, n);
  TbbRows rows(&arena, m, k);
  openblas_set_num_threads(1);
  TbbBlas blas(&arena, m, k, n);
  for (int w = 0; w < 5; ++w) {
    gemm.run();
    rows.run();
  }
  // Four cases, one call each per round, interleaved: the timed call and the call before it.
  std::vector<double> gemm_after_gemm, gemm_after_tbb, tbb_after_tbb, tbb_after_gemm,
      gemm_after_blas, blas_after_blas, blas_after_gemm;
  auto timed = [](auto& f) {
    const double t0 = now_us();
    f.run();
    return now_us() - t0;
  };
  for (int r = 0; r < reps; ++r) {
    gemm.run();
    gemm_after_gemm.push_back(timed(gemm));
    rows.run();
    gemm_after_tbb.push_back(timed(gemm));
    rows.run();
    tbb_after_tbb.push_back(timed(rows));
    gemm.run();
    tbb_after_gemm.push_back(timed(rows));
    blas.run();
    gemm_after_blas.push_back(timed(gemm));
    blas.run();
    blas_after_blas.push_back(timed(blas));
    gemm.run();
    blas_after_gemm.push_back(timed(blas));
  }
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("threads %d, OMP_WAIT_POLICY=%s, passive waiting %s, oneDNN %ldx%ldx%ld, rows "
              "%ldx%ld, %d rounds\n",
              threads, policy ? policy : "(unset)",
              rlx::cpu::passive_waiting_active() ? "on" : "off", m, k, n, m, k, reps);
  std::printf("%-28s %10s %10s\n", "case (timed call after ...)", "median us", "p10 us");
  auto row = [](const char* name, const std::vector<double>& v) {
    std::printf("%-28s %10.1f %10.1f\n", name, quantile(v, 0.5), quantile(v, 0.1));
  };
  row("onednn after onednn", gemm_after_gemm);
  row("onednn after tbb", gemm_after_tbb);
  row("tbb after tbb", tbb_after_tbb);
  row("tbb after onednn", tbb_after_gemm);
  row("onednn after tbb openblas", gemm_after_blas);
  row("tbb openblas after itself", blas_after_blas);
  row("tbb openblas after onednn", blas_after_gemm);
  return 0;
}
