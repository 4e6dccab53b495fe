// gemm_choice.cpp: `--gemm auto`: every f32 product shape timed once on oneDNN, OpenBLAS and the
// packed GEMM (with its epilogue), on buffers of the real shape with the weights packed as the
// kernel reads them, the candidates' calls interleaved, each framed by TBB-parallel reads of its
// result (the hand-over between thread pools a real run pays), each candidate's fastest; the
// fastest candidate is cached by shape, transposes, epilogue, packable weights, threads and ISA,
// in the process and in a record file that later processes read (so every process on a machine
// makes the same choice: a resumed training run computes bit-identically to an uninterrupted
// one).
#include "gemm_choice.hpp"
#include "compile_clock.hpp"

#include "onednn.hpp"
#include "pools.hpp"
#include "rlx/ir/error.hpp"

#include <oneapi/dnnl/dnnl.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

namespace rlx::cpu {
namespace {

/// Milliseconds of timed calls spent on one shape (after one warm-up call of each candidate), when
/// the product is fast enough.
constexpr double kPerShapeMs = 12;
/// Rounds of interleaved calls (one timed call of each candidate per round): at least enough that
/// one burst of another process does not cover every call of a candidate, at most what a small
/// product needs.
constexpr int kMinRounds = 4, kMaxRounds = 11;

struct FreeAligned {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte[], FreeAligned>;

AlignedBytes aligned_bytes(std::int64_t bytes) {
  auto size = static_cast<std::size_t>((std::max<std::int64_t>(bytes, 1) + 63) / 64 * 64);
  AlignedBytes p(static_cast<std::byte*>(std::aligned_alloc(64, size)));
  if (!p)
    throw Error("rlx-cpu: out of memory timing a GEMM (" + std::to_string(bytes) + " bytes)");
  return p;
}

/// \p n floats in [-1, 1) from a fixed LCG (values do not matter for timing; no denormals).
AlignedBytes random_floats(std::int64_t n) {
  AlignedBytes p = aligned_bytes(n * 4);
  auto* f = reinterpret_cast<float*>(p.get());
  std::uint32_t x = 12345;
  for (std::int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    f[i] = static_cast<float>(x >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return p;
}

std::int64_t numel(const std::vector<std::int64_t>& sizes) {
  std::int64_t n = 1;
  for (auto d : sizes)
    n *= d;
  return n;
}

/// The element count in double: a shape too large to compile must not overflow while it is sized.
double numel_d(const std::vector<std::int64_t>& sizes) {
  double n = 1;
  for (auto d : sizes)
    n *= static_cast<double>(d);
  return n;
}

/// Operands and result larger than this (bytes, together) are not timed: the timing buffers would
/// be as large as the product's own (and such a product is usually refused by the planner later).
constexpr double kMaxTimedBytes = 1024.0 * 1024 * 1024;

/// Packs weights into buffers of its own (the real packed layout, as the executable would).
class LocalPacker final : public onednn::WeightPacker {
public:
  void* packed(ir::NodeId, const std::byte* src, const dnnl::memory::desc& src_md,
               const dnnl::memory::desc& packed_md) override {
    buffers_.push_back(aligned_bytes(static_cast<std::int64_t>(packed_md.get_size())));
    dnnl::stream stream(onednn::engine());
    dnnl::memory from(src_md, onednn::engine(), const_cast<std::byte*>(src));
    dnnl::memory to(packed_md, onednn::engine(), buffers_.back().get());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
    return buffers_.back().get();
  }
  void* packed_own(ir::NodeId, const std::byte* src, const std::string&, std::int64_t bytes,
                   const onednn::OwnPackFn& pack, const onednn::OwnPackFn&) override {
    buffers_.push_back(aligned_bytes(bytes));
    pack(src, buffers_.back().get());
    return buffers_.back().get();
  }

private:
  std::vector<AlignedBytes> buffers_;
};

double fastest(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

/// Reads \p n floats at \p p on every thread of \p pool (a TBB-parallel sum, as the kernel after a
/// product reads its result): TBB's workers run, then spin for a while, as in a real run between
/// the TBB kernels and a product.
void tbb_touch(tbb::task_arena& pool, int threads, const float* p, std::int64_t n) {
  static std::atomic<int> sink{0};
  pool.execute([&] {
    const std::int64_t grain = std::max<std::int64_t>(1, n / std::max(threads, 1));
    tbb::parallel_for(
        tbb::blocked_range<std::int64_t>(0, n, grain),
        [&](const tbb::blocked_range<std::int64_t>& r) {
          float s = 0;
          for (std::int64_t i = r.begin(); i < r.end(); ++i)
            s += p[i];
          sink.fetch_add(s > 0, std::memory_order_relaxed);
        },
        tbb::static_partitioner());
  });
}

/// Throughput-bound busy work of about 0.3 ms (32 independent multiply-add chains: enough to fill
/// a core's vector units, so two threads sharing one core take twice as long as on two cores).
float busy_chunk() {
  float acc[32];
  for (int j = 0; j < 32; ++j)
    acc[j] = 1.0f + static_cast<float>(j) * 1e-3f;
  for (int i = 0; i < 20000; ++i)
#pragma omp simd
    for (int j = 0; j < 32; ++j)
      acc[j] = acc[j] * 0.999999f + 1e-7f;
  float sum = 0;
  for (float a : acc)
    sum += a;
  return sum;
}

/// One busy_chunk() on each of \p threads threads of \p pool at once.
void busy_on_pool(tbb::task_arena& pool, int threads) {
  static std::atomic<int> sink{0};
  pool.execute([&] {
    tbb::parallel_for(
        0, std::max(threads, 1),
        [&](int) { sink.fetch_add(busy_chunk() > 0, std::memory_order_relaxed); },
        tbb::static_partitioner());
  });
}

/// Keeps \p threads threads of \p pool busy for \p ms milliseconds of wall time (kGemmSettleMs
/// says why).
void settle_threads(tbb::task_arena& pool, int threads, double ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < end)
    busy_on_pool(pool, threads);
}

/// The pool's parallel efficiency now: one busy_chunk() alone over one on each of \p threads
/// threads at once (the fastest of 3 tries each; 1 = the threads ran on separate cores).
double parallel_efficiency(tbb::task_arena& pool, int threads) {
  static std::atomic<int> sink{0};
  auto ms_of = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  double alone = 1e30, together = 1e30;
  for (int r = 0; r < 3; ++r) {
    alone = std::min(alone, ms_of([&] { sink.fetch_add(busy_chunk() > 0); }));
    together = std::min(together, ms_of([&] { busy_on_pool(pool, threads); }));
  }
  return alone / together;
}

/// Settles the pool (kGemmSettleMs at a time, at most kGemmSettleTries times) until its parallel
/// efficiency reaches the floor; \returns the last efficiency measured.
double settle_until_parallel(tbb::task_arena& pool, int threads) {
  double eff = 0;
  for (int t = 0; t < kGemmSettleTries; ++t) {
    settle_threads(pool, threads, kGemmSettleMs);
    eff = parallel_efficiency(pool, threads);
    if (eff >= kGemmParallelEfficiencyFloor)
      break;
  }
  return eff;
}

/// The TBB pool of \p threads threads the epilogues run on while measuring (kept: creating one
/// per shape costs more than timing a small product). Called under the cache's lock.
tbb::task_arena& measuring_pool(int threads) {
  static std::map<int, std::unique_ptr<tbb::task_arena>> pools;
  auto& p = pools[threads];
  if (!p)
    p = std::make_unique<tbb::task_arena>(threads);
  return *p;
}

/// Times oneDNN, OpenBLAS and the packed GEMM on \p shape (addresses ignored) on \p threads
/// threads.
GemmChoice measure(const MatMulSpec& shape, int threads) {
  AlignedBytes a = random_floats(numel(shape.a_sizes));
  AlignedBytes b = random_floats(numel(shape.b_sizes));
  AlignedBytes out = aligned_bytes(numel(shape.out_sizes) * 4);
  const std::int64_t n = shape.out_sizes.back();
  AlignedBytes bias = random_floats(n);
  MatMulSpec s = shape;
  s.a = a.get();
  s.b = b.get();
  s.out = out.get();
  s.bias = s.has_bias ? bias.get() : nullptr;
  LocalPacker packer;
  s.packer = &packer;
  // A candidate that cannot run the product (oneDNN has no algorithm for the epilogue, ...) leaves
  // the choice to the other one, unmeasured.
  s.threads = threads;
  AlignedBytes scratch, packed_scratch;
  std::unique_ptr<Kernel> cand[3];
  try {
    scratch = aligned_bytes(matmul_scratch_bytes(s, GemmImpl::onednn));
    cand[0] = make_matmul_kernel(s, GemmImpl::onednn, scratch.get());
  } catch (const Error&) {
    return GemmChoice{GemmImpl::openblas};
  } catch (const dnnl::error&) {
    return GemmChoice{GemmImpl::openblas};
  }
  try {
    cand[1] = make_matmul_kernel(s, GemmImpl::openblas, nullptr);
  } catch (const Error&) {
    return GemmChoice{GemmImpl::onednn};
  }
  if (packed_gemm_accepts(s)) {
    packed_scratch = aligned_bytes(matmul_scratch_bytes(s, GemmImpl::packed));
    cand[2] = make_matmul_kernel(s, GemmImpl::packed, packed_scratch.get());
  }
  dnnl::stream stream(onednn::engine());
  ExecContext ctx{&measuring_pool(threads), &stream, threads};
  set_openmp_threads(threads);
  configure_library_threads(1); // as a run sets it: OpenBLAS runs inside our TBB tasks
  // A real run calls a product between TBB-parallel kernels: oneDNN's OpenMP threads wake while
  // TBB's workers still spin after the kernel before (and the other way round after the product),
  // a hand-over the packed GEMM and OpenBLAS (run on the TBB pool) never pay. So each timed call
  // is framed as in a run: a TBB read of the output before it (untimed), then the call and a TBB
  // read of its result (timed together); the candidates' calls are interleaved, the order rotated
  // from round to round, and a candidate's figure is its fastest framed call less the fastest
  // read alone (the figures are the products' own, hand-over included). The fastest, not the
  // median: on the shared machine (load 7 on 2 cores) medians of 5 framed calls still moved 2-4x
  // with other processes' bursts (the packed QKV product of llama at 11 ms against 2.5), while
  // the hand-over is paid by every framed call, the fastest included. The previous scheme (the
  // fastest call of blocks of one candidate each) hid the hand-over and chose oneDNN for products
  // that ran slower in the training step than the packed GEMM.
  const auto* result = reinterpret_cast<const float*>(out.get());
  const std::int64_t out_n = numel(shape.out_sizes);
  auto framed_ms = [&](Kernel* k) {
    tbb_touch(measuring_pool(threads), threads, result, out_n);
    auto t0 = std::chrono::steady_clock::now();
    if (k)
      k->run(ctx);
    tbb_touch(measuring_pool(threads), threads, result, out_n);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  double warm = 0; // a warm-up call of each: first touch of the output, packing, library set-up
  for (auto& k : cand)
    if (k)
      warm += framed_ms(k.get());
  const int rounds =
      std::clamp(static_cast<int>(kPerShapeMs / std::max(warm, 1e-3)), kMinRounds, kMaxRounds);
  std::vector<double> t[4]; // the candidates, then the read alone
  for (int round = 0; round < rounds; ++round)
    for (int j = 0; j < 4; ++j) {
      const int i = (round + j) % 4;
      if (i == 3 || cand[i])
        t[i].push_back(framed_ms(i == 3 ? nullptr : cand[i].get()));
    }
  const double read_ms = fastest(t[3]);
  auto figure = [&](int i) { return std::max(fastest(t[i]) - read_ms, 1e-6); };
  GemmChoice c;
  c.measured = true;
  c.onednn_ms = figure(0);
  c.openblas_ms = figure(1);
  c.packed_ms = cand[2] ? figure(2) : 0;
  c.impl = gemm_choice_from(c.onednn_ms, c.openblas_ms, c.packed_ms);
  return c;
}

std::string key_of(const MatMulSpec& s, int threads) {
  std::string k;
  auto dims = [&](const std::vector<std::int64_t>& v) {
    for (auto d : v)
      k += std::to_string(d) + ",";
    k += ";";
  };
  dims(s.a_sizes);
  dims(s.b_sizes);
  dims(s.out_sizes);
  k += std::to_string(s.transpose_a) + std::to_string(s.transpose_b) +
       std::to_string(s.has_bias || s.bias) + std::to_string(static_cast<int>(s.act)) +
       std::to_string(s.pack_b) + ";t" + std::to_string(threads) + ";isa" +
       std::to_string(static_cast<unsigned>(dnnl_get_effective_cpu_isa())) + ";";
  // The packed GEMM's ISA and tile shape: a record made with another tile is measured again.
  const packed::Isa isa = packed::best_isa();
  k += std::string(packed::isa_name(isa)) + "-" + std::to_string(packed::kernels(isa).tile_rows()) +
       "x" + std::to_string(packed::kernels(isa).tile_cols()) + ";v8"; // v8: the tile's shape
  return k;
}

struct Cache {
  std::mutex mutex;
  std::map<std::string, GemmChoice> choices;
  GemmChoiceStats stats;
};
Cache& cache() {
  static Cache c;
  return c;
}

/// The record file, open and locked (flock, exclusive) for its lifetime, so that two processes
/// never time the same shape at once and both choices land in it. A file that cannot be opened
/// leaves the record off (the choice is still made and kept in the process).
class RecordFile {
public:
  explicit RecordFile(const std::string& path) {
    if (path.empty())
      return;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  ~RecordFile() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }

  /// The first well-formed record of \p key ("key \t onednn|openblas|packed \t ms \t ms \t ms");
  /// malformed lines (a torn write, an edited file) are skipped.
  std::optional<GemmChoice> find(const std::string& key) const {
    if (fd_ < 0)
      return std::nullopt;
    std::string text;
    char buf[8192];
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
      if (n <= 0)
        break;
      text.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream f(line);
      std::string k, impl;
      GemmChoice c;
      if (!std::getline(f, k, '\t') || k != key || !std::getline(f, impl, '\t') ||
          !(f >> c.onednn_ms >> c.openblas_ms >> c.packed_ms) ||
          (impl != "onednn" && impl != "openblas" && impl != "packed"))
        continue;
      c.impl = impl == "onednn"     ? GemmImpl::onednn
               : impl == "openblas" ? GemmImpl::openblas
                                    : GemmImpl::packed;
      c.measured = true;
      c.recorded = true;
      return c;
    }
    return std::nullopt;
  }

  /// Appends the record of \p key (one write: O_APPEND keeps lines whole).
  void add(const std::string& key, const GemmChoice& c) const {
    if (fd_ < 0)
      return;
    char tail[128];
    std::snprintf(tail, sizeof tail, "\t%s\t%.6f\t%.6f\t%.6f\n", gemm_impl_name(c.impl),
                  c.onednn_ms, c.openblas_ms, c.packed_ms);
    const std::string line = key + tail;
    [[maybe_unused]] const ssize_t w = ::write(fd_, line.data(), line.size());
  }

private:
  int fd_ = -1;
};

} // namespace

std::string GemmChoice::note() const {
  if (!measured)
    return impl == GemmImpl::openblas ? "auto: openblas, the only candidate"
           : over_budget              ? "auto: onednn, not measured (the measuring budget is spent)"
           : too_large                ? "auto: onednn, not measured (over 1 GiB of operands)"
                                      : "auto: onednn, not measured (little work)";
  // The candidates fastest first (the packed GEMM only when it ran).
  std::vector<std::pair<double, GemmImpl>> t{{onednn_ms, GemmImpl::onednn},
                                             {openblas_ms, GemmImpl::openblas}};
  if (packed_ms > 0)
    t.emplace_back(packed_ms, GemmImpl::packed);
  std::stable_sort(t.begin(), t.end(), [&](const auto& x, const auto& y) {
    return (x.second == impl) != (y.second == impl) ? x.second == impl : x.first < y.first;
  });
  // The winner, then the rest fastest first ("<"); a ";" after the winner when another timed
  // faster but not by its margin.
  const bool margin = t.size() > 1 && t[1].first < t[0].first;
  std::string out = "auto:";
  char buf[64];
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s %s %.3f ms", i == 0 ? "" : (i == 1 && margin ? ";" : " <"),
                  gemm_impl_name(t[i].second), t[i].first);
    out += buf;
  }
  if (margin) {
    const double m = t[1].second == GemmImpl::onednn ? kGemmOtherPoolMargin : kGemmPackedMargin;
    out += std::string(", ") + gemm_impl_name(t[1].second) + " not " +
           std::to_string(static_cast<int>(m * 100 + 0.5)) + "% faster";
  }
  return out + (recorded ? ", recorded" : "");
}

std::string gemm_record_path() {
  if (const char* p = std::getenv("RLX_GEMM_CHOICES"); p != nullptr)
    return std::string(p) == "off" ? std::string() : std::string(p);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/rlx/gemm-choices.tsv";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/rlx/gemm-choices.tsv";
  return {};
}

void forget_gemm_choices() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.choices.clear();
}

GemmImpl gemm_choice_from(double onednn_ms, double openblas_ms, double packed_ms) {
  double tbb_ms = 0; // the TBB pool's choice
  GemmImpl tbb = GemmImpl::onednn;
  if (openblas_ms > 0) {
    tbb_ms = openblas_ms;
    tbb = GemmImpl::openblas;
  }
  if (packed_ms > 0 && (tbb_ms == 0 || tbb_ms * (1 + kGemmPackedMargin) >= packed_ms)) {
    tbb_ms = packed_ms;
    tbb = GemmImpl::packed;
  }
  if (tbb_ms == 0 || (onednn_ms > 0 && onednn_ms * (1 + kGemmOtherPoolMargin) < tbb_ms))
    return GemmImpl::onednn;
  return tbb;
}

GemmChoice measured_gemm(const MatMulSpec& spec, int threads, std::int64_t min_work) {
  if (spec.dtype != ir::DType::f32)
    throw Error("rlx-cpu: only f32 products choose their GEMM by measuring");
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  ++c.stats.lookups;
  // The threshold first: a product under it goes to oneDNN even when this process measured its
  // shape for a caller with a lower threshold, so every process with the same threshold chooses
  // alike (the record file is not read for it either).
  const double work = numel_d(spec.out_sizes) *
                      static_cast<double>(spec.transpose_a ? spec.a_sizes[spec.a_sizes.size() - 2]
                                                           : spec.a_sizes.back());
  if (work < static_cast<double>(min_work)) {
    GemmChoice fixed; // oneDNN, not remembered
    return fixed;
  }
  const std::string key = key_of(spec, threads);
  if (auto it = c.choices.find(key); it != c.choices.end())
    return it->second;
  const double bytes =
      4 * (numel_d(spec.a_sizes) + numel_d(spec.b_sizes) + numel_d(spec.out_sizes));
  if (bytes > kMaxTimedBytes) {
    GemmChoice fixed; // oneDNN, not remembered
    fixed.too_large = true;
    return fixed;
  }
  const RecordFile record(gemm_record_path());
  if (std::optional<GemmChoice> r = record.find(key)) {
    ++c.stats.recorded;
    c.choices.emplace(key, *r);
    return *r;
  }
  if (c.stats.spent_ms >= kGemmMeasureBudgetMs) {
    GemmChoice fixed; // oneDNN, not remembered
    fixed.over_budget = true;
    return fixed;
  }
  auto t0 = std::chrono::steady_clock::now();
  GemmChoice choice;
  {
    PhaseTimer timer(CompilePhase::measure);
    if (!c.stats.settled && threads > 1) { // once per process: later products find it settled
      c.stats.parallel_efficiency = settle_until_parallel(measuring_pool(threads), threads);
      c.stats.settled = true;
    }
    choice = measure(spec, threads);
  }
  c.stats.spent_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++c.stats.measured;
  c.choices.emplace(key, choice);
  record.add(key, choice);
  return choice;
}

GemmChoiceStats gemm_choice_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.stats;
}

} // namespace rlx::cpu
