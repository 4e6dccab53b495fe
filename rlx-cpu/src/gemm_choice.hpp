// gemm_choice.hpp (private): the per-shape GEMM provider choice of `--gemm auto`
// (GemmProvider::automatic). Each f32 product shape is timed once on every candidate provider, on
// buffers of the real shape with the weights in the layout the kernel would read (oneDNN's packed
// copy), and the fastest is remembered: in the process, and in a record file shared by every
// process of the machine (gemm_record_path), so they all choose alike.
#pragma once

#include "matmul.hpp"

#include <cstdint>
#include <string>

namespace rlx::cpu {

/// The provider chosen for one product shape, with what it was based on.
struct GemmChoice {
  GemmImpl impl = GemmImpl::onednn;
  /// Whether the candidates were timed (false: under the work threshold or past the budget).
  bool measured = false;
  /// Not timed because the process's measuring budget was spent (else: under the threshold).
  bool over_budget = false;
  /// Not timed because its operands and result exceed 1 GiB together.
  bool too_large = false;
  /// Read from the record file (timed by an earlier process, or by this one before
  /// forget_gemm_choices).
  bool recorded = false;
  /// Milliseconds per call of each candidate as a run pays it: the fastest of its calls framed by
  /// TBB-parallel reads of the result, less the fastest read alone (0 when not measured; packed_ms
  /// also when the packed GEMM declines the product).
  double onednn_ms = 0, openblas_ms = 0, packed_ms = 0;
  /// "auto: packed 0.38 ms < onednn 0.41 ms < openblas 0.55 ms" or why it was not measured (for
  /// the listing).
  std::string note() const;
};

/// The wall-clock milliseconds one process spends timing candidates at most; shapes met after
/// that go to oneDNN unmeasured (and are not remembered, so a later process measures them).
inline constexpr double kGemmMeasureBudgetMs = 1500;

/// Milliseconds of TBB-parallel busy work before a process's first measurement on more than one
/// thread. On the 2-core VMs rlx is developed on, a process's first ~70 ms of parallel work ran at
/// one core's speed, and products timed in that window compared the providers at the wrong speed
/// (the packed GEMM's first MLP layer timed 0.66 ms there and 0.33 ms in the run that followed, so
/// oneDNN was chosen and the MLP ran 1.9x slower).
inline constexpr double kGemmSettleMs = 100;
/// Settling goes on (kGemmSettleMs at a time, at most kGemmSettleTries times) until the measuring
/// pool's parallel efficiency (one thread's busy work alone over all threads' at once; 1 = they
/// ran on separate cores) reaches this floor. On the 2-core dev VM whole spells ran at about one
/// core's speed, not only a process's first ~70 ms: a choice timed in one (the MLP's first layer:
/// packed 0.63 ms, oneDNN 0.61, against 0.36 / 0.49 in a good spell) was recorded for every later
/// process, which ran the MLP 1.2-1.4x slower than ONNX Runtime instead of level with it. A spell
/// longer than the tries is not waited out: the choice is recorded all the same (every process
/// must choose alike, so a resumed training run rounds as the first one did).
inline constexpr double kGemmParallelEfficiencyFloor = 0.75;
inline constexpr int kGemmSettleTries = 5;

/// How much faster than the fastest provider on our TBB pool (the packed GEMM, OpenBLAS in TBB
/// tasks) oneDNN must time to be chosen: it runs on a second pool (libgomp's), and a model run
/// then hands the cores from pool to pool around each of its products. The framed fastest call
/// does not see what that costs on a shared VM: a tail. On the 2-core dev VM (2026-11-26, ABBA
/// runs) llama b1 with oneDNN's SwiGLU product (4.5% faster alone) had median 23.9-27.5 ms against
/// 23.4-25.4 with every product on the TBB pool, and BERT-base b1 with oneDNN's FFN-down (3%
/// faster alone) 153-166 ms against 151-159; the fastest runs were 2-4% better with the mix.
inline constexpr double kGemmOtherPoolMargin = 0.10;
/// How much faster than the packed GEMM OpenBLAS must time to be chosen. Timed alone, a product's
/// weight and A are hot in cache on every call; in a model run the packed GEMM's weight is packed
/// once and its next panel prefetched, while OpenBLAS packs both operands on every call. On the
/// dev VM (2026-11-26, ABBA runs of whole models) OpenBLAS timed 1-3.5% faster alone on BERT-base's
/// products and the models ran 2-5% slower with it: BERT-base b8 1189-1220 ms against 1155-1176
/// with every product packed, b1 153-160 against 144-148.
inline constexpr double kGemmPackedMargin = 0.10;

/// The provider chosen from measured figures (ms; 0 for a candidate that declined, and at least
/// one of them measured): the packed GEMM unless OpenBLAS beats it by more than
/// kGemmPackedMargin, then that one unless oneDNN beats it by more than kGemmOtherPoolMargin.
GemmImpl gemm_choice_from(double onednn_ms, double openblas_ms, double packed_ms);

/// The provider for the f32 product \p spec on \p threads threads: the cached decision for its
/// key (shapes, transposes, bias, activation, packable weights, threads, ISA), else the record
/// file's, else measured now (under the file's lock, so two processes never time one shape
/// twice) and remembered in the process and the file. Products under \p min_work multiply-adds
/// are not measured. Thread-safe (measurements are serialised).
GemmChoice measured_gemm(const MatMulSpec& spec, int threads, std::int64_t min_work);

/// The record file of measured choices: `$RLX_GEMM_CHOICES` (the value `off` turns the record
/// off), else `$XDG_CACHE_HOME/rlx/gemm-choices.tsv`, else `~/.cache/rlx/gemm-choices.tsv`; empty
/// when off. One line per choice: key, provider, the medians of oneDNN, OpenBLAS and the packed
/// GEMM (ms; 0 when it declined). Malformed lines are skipped.
std::string gemm_record_path();

/// Forgets this process's remembered choices (tests: the next lookups read the record file).
void forget_gemm_choices();

/// Statistics of this process's measured choices (for tests and `rlx bench`).
struct GemmChoiceStats {
  std::int64_t measured = 0; ///< shapes timed
  std::int64_t lookups = 0;  ///< decisions asked for (measured + cache hits + unmeasured)
  std::int64_t recorded = 0; ///< choices read from the record file
  double spent_ms = 0;       ///< wall time spent timing (settling included)
  bool settled = false; ///< the threads were settled (kGemmSettleMs tries) before a measurement
  double parallel_efficiency = 0; ///< the measuring pool's when settling ended (0: not settled)
};
/// The statistics so far.
GemmChoiceStats gemm_choice_stats();

} // namespace rlx::cpu
