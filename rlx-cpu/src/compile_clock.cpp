// compile_clock.cpp: CompileClock and PhaseTimer.
#include "compile_clock.hpp"

#include <atomic>

namespace rlx::cpu {
namespace {

thread_local CompileBreakdown* open_out = nullptr;
thread_local const PhaseTimer* running_timer = nullptr;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::atomic<std::int64_t> prepared_ns{0};
std::atomic<std::int64_t> prepared_bytes{0};

} // namespace

CompileClock::CompileClock(CompileBreakdown& out)
    : out_(out), outer_(open_out), outer_timer_(running_timer),
      t0_(std::chrono::steady_clock::now()) {
  out_ = CompileBreakdown{};
  open_out = &out_;
  running_timer = nullptr; // the nested compile's phases are its own
}

CompileClock::~CompileClock() {
  out_.total_ms = ms_since(t0_);
  out_.lower_ms = out_.total_ms - out_.primitives_ms - out_.weights_ms - out_.measure_ms;
  if (out_.lower_ms < 0)
    out_.lower_ms = 0;
  open_out = outer_;
  running_timer = static_cast<const PhaseTimer*>(outer_timer_);
}

PhaseTimer::PhaseTimer(CompilePhase p)
    : phase_(p), counts_(open_out != nullptr && running_timer == nullptr) {
  if (!counts_)
    return;
  running_timer = this;
  t0_ = std::chrono::steady_clock::now();
}

PhaseTimer::~PhaseTimer() {
  if (!counts_)
    return;
  running_timer = nullptr;
  if (open_out == nullptr)
    return;
  const double ms = ms_since(t0_);
  switch (phase_) {
  case CompilePhase::primitives:
    open_out->primitives_ms += ms;
    break;
  case CompilePhase::weights:
    open_out->weights_ms += ms;
    break;
  case CompilePhase::measure:
    open_out->measure_ms += ms;
    break;
  }
}

void count_prepared_weight_bytes(std::int64_t bytes) {
  if (open_out != nullptr)
    open_out->weight_bytes += bytes;
}

PreparationTimer::PreparationTimer(std::int64_t bytes)
    : bytes_(bytes), t0_(std::chrono::steady_clock::now()) {}

PreparationTimer::~PreparationTimer() {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_);
  prepared_ns.fetch_add(ns.count(), std::memory_order_relaxed);
  prepared_bytes.fetch_add(bytes_, std::memory_order_relaxed);
  count_prepared_weight_bytes(bytes_);
}

WeightPreparation weight_preparation() {
  return {static_cast<double>(prepared_ns.load(std::memory_order_relaxed)) / 1e6,
          prepared_bytes.load(std::memory_order_relaxed)};
}

} // namespace rlx::cpu
