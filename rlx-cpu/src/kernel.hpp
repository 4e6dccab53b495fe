// kernel.hpp (private): Kernel, the record the executable runs, and ExecContext, what every
// kernel may use while it runs.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace rlx::cpu {

/// What kernels share while one executable runs: its TBB arena (the pool of our own parallel
/// kernels, sized to the backend's thread count) and its oneDNN stream.
struct ExecContext {
  tbb::task_arena* pool = nullptr;
  dnnl::stream* stream = nullptr;
  int threads = 1;
};

/// One compiled kernel: every address it touches was resolved from the memory plan at compile
/// time, and everything it needs (oneDNN primitives, tables, loop bounds) was built then too. run()
/// allocates nothing.
class Kernel {
public:
  virtual ~Kernel() = default;
  /// Runs the kernel once.
  virtual void run(ExecContext& ctx) = 0;
  /// Words the kernel listing adds after the implementation's name (e.g. why `--gemm auto` chose
  /// it); empty by default.
  const std::string& note() const { return note_; }
  /// Sets note().
  void set_note(std::string note) { note_ = std::move(note); }

private:
  std::string note_;
};

/// Calls \p fn(begin, end) over [0, n) in chunks of at least \p grain, on the executable's TBB
/// pool when there is more than one chunk and more than one thread, inline otherwise. Never call
/// oneDNN or OpenBLAS from \p fn: they run their own pools.
template <class Fn>
void parallel_for(ExecContext& ctx, std::int64_t n, std::int64_t grain, Fn&& fn) {
  if (n <= 0)
    return;
  grain = std::max<std::int64_t>(grain, 1);
  if (ctx.threads <= 1 || n <= grain || ctx.pool == nullptr) {
    fn(std::int64_t{0}, n);
    return;
  }
  ctx.pool->execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain),
                      [&](const tbb::blocked_range<std::int64_t>& r) { fn(r.begin(), r.end()); });
  });
}

/// Like parallel_for, but also passes \p fn the calling thread's slot in [0, ctx.threads), which
/// selects that thread's slice of a kernel's scratch buffer (no two concurrent calls share a slot).
template <class Fn>
void parallel_for_slots(ExecContext& ctx, std::int64_t n, std::int64_t grain, Fn&& fn) {
  if (n <= 0)
    return;
  grain = std::max<std::int64_t>(grain, 1);
  if (ctx.threads <= 1 || n <= grain || ctx.pool == nullptr) {
    fn(std::int64_t{0}, n, 0);
    return;
  }
  ctx.pool->execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        int slot = tbb::this_task_arena::current_thread_index();
                        fn(r.begin(), r.end(), slot < 0 ? 0 : slot);
                      });
  });
}

/// Work units (about one element operation each) worth one task: roughly 20-40 µs on one core,
/// well above the cost of waking a sleeping pool thread, so small kernels stay on one thread.
inline constexpr std::int64_t kTaskWork = 1 << 17;

/// A grain (elements per task) that gives each task about \p target_work units when one element
/// costs \p work_per_element.
inline std::int64_t grain_for(std::int64_t work_per_element, std::int64_t target_work = kTaskWork) {
  return std::max<std::int64_t>(1, target_work / std::max<std::int64_t>(work_per_element, 1));
}

} // namespace rlx::cpu
