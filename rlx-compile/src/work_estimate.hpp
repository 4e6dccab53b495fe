// work_estimate.hpp (private): how much evaluating a node in the reference interpreter costs, in
// work units of about 4 ns (one multiply-add of a contraction; an element read or written by any
// other op is 4 units, as measured by bench/fold_cost.cpp). const-fold uses it to bound what it
// hands to the reference interpreter at compile time.
#pragma once

#include "rlx/ir/graph.hpp"

#include <limits>

namespace rlx::compile::detail {

/// The estimate for work that cannot be bounded (symbolic sizes inside a sub-graph).
inline constexpr double kUnboundedWork = std::numeric_limits<double>::infinity();

/// Work units to evaluate node \p id of \p g once: MatMul M*N*K per batch, DotGeneral
/// output elements times the contracted size, Conv2d output elements times the filter volume per
/// output, Attention (Sq * Sk * (D + Dv)) per batch and head, DenseSolve n^3 + n^2 k, If the
/// dearer branch, While max_iterations times (cond + body), CustomFn its body, and every other op
/// 4 units per element it reads and writes. kUnboundedWork when a size is symbolic.
double node_work(const ir::Graph& g, ir::NodeId id);

/// Whether node_work counts multiply-adds for \p k (the contractions: MatMul, MatMulBiasAct,
/// SwiGluMatMul, DotGeneral, Conv2d, Attention, FusedAttentionBlock, FusedTransformerLayer,
/// DenseSolve) rather than
/// touched elements.
bool counts_multiply_adds(ir::OpKind k);

/// The sum of node_work over the non-leaf nodes of \p g.
double graph_work(const ir::Graph& g);

} // namespace rlx::compile::detail
