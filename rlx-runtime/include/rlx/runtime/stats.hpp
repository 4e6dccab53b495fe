// stats.hpp: figures the CLI and benchmarks report: FLOP counts and process memory.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>

namespace rlx::runtime {

/// Floating-point operations of one run of \p g with its symbols bound by \p bindings, counting
/// the matrix products only, as the peer benchmarks do: 2·M·N·K per MatMul (times its batch), and
/// 4·B·H·Sq·Sk·D per Attention (Q·Kᵀ and P·V, dense: masked scores are counted). HIR blocks are
/// counted through their lowering. Throws Error when a counted dim stays symbolic.
double count_flops(const ir::Graph& g, const ir::Bindings& bindings = {});

/// The peak resident set size of this process so far, in bytes (0 when the OS does not say).
std::int64_t peak_rss_bytes();

} // namespace rlx::runtime
