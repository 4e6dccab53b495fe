// compile_clock.hpp (private): where a CPU executable's compile spends its time. The executable
// opens a CompileClock for its constructor; PhaseTimers placed at the few sites that prepare
// weights, create oneDNN primitives or time candidate GEMMs add their time to it. Only the
// outermost timer of a thread counts (a primitive created while measuring is measuring time), so
// the phases never overlap and the rest of the total is lowering.
#pragma once

#include "rlx/cpu/backend.hpp"

#include <chrono>
#include <cstdint>

namespace rlx::cpu {

/// A phase of the backend's compile that a PhaseTimer accounts.
enum class CompilePhase { primitives, weights, measure };

/// Accounts the compile on the calling thread into \p out while alive (nested clocks, e.g. a
/// control-flow kernel compiling its sub-graphs, account into their own and restore the outer).
/// On destruction sets out.total_ms and out.lower_ms (the total less the timed phases).
class CompileClock {
public:
  explicit CompileClock(CompileBreakdown& out);
  ~CompileClock();
  CompileClock(const CompileClock&) = delete;
  CompileClock& operator=(const CompileClock&) = delete;

private:
  CompileBreakdown& out_;
  CompileBreakdown* outer_; ///< the enclosing clock's breakdown (a nested compile)
  const void* outer_timer_; ///< the enclosing compile's running timer
  std::chrono::steady_clock::time_point t0_;
};

/// Adds its lifetime to phase \p p of the thread's open CompileClock, unless another PhaseTimer
/// of the thread is already running (then the outer one gets the time). Costs two clock reads.
class PhaseTimer {
public:
  explicit PhaseTimer(CompilePhase p);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

private:
  CompilePhase phase_;
  bool counts_;
  std::chrono::steady_clock::time_point t0_;
};

/// Counts \p bytes of weight copies filled (packed, reordered, concatenated) into the thread's
/// open CompileClock, if any (PreparationTimer calls it).
void count_prepared_weight_bytes(std::int64_t bytes);

/// Adds its lifetime and \p bytes to the process-wide weight_preparation() totals, and \p bytes to
/// the thread's open CompileClock: placed in every fill of a derived weight copy.
class PreparationTimer {
public:
  explicit PreparationTimer(std::int64_t bytes);
  ~PreparationTimer();
  PreparationTimer(const PreparationTimer&) = delete;
  PreparationTimer& operator=(const PreparationTimer&) = delete;

private:
  std::int64_t bytes_;
  std::chrono::steady_clock::time_point t0_;
};

} // namespace rlx::cpu
