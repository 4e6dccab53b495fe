// memory_plan.hpp: the memory planner (liveness + best-fit heap placement + view aliasing).
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"

#include <cstdint>
#include <functional>

namespace rlx::compile {

/// Options of plan_memory().
struct PlanOptions {
  std::int64_t alignment = 64; ///< every slot offset is a multiple of this (power of two)
  /// Scratch bytes node \p id's kernel needs while it runs (planned as a temporary live only
  /// during that node); empty = none.
  std::function<std::int64_t(const ir::Graph&, ir::NodeId)> scratch_bytes;
  /// Placement strategy: best_fit is the default; first_fit is kept for comparison only.
  enum class Strategy { best_fit, first_fit } strategy = Strategy::best_fit;
};

/// True iff node \p id's value is its operand's buffer at a byte offset (Reshape, same-dtype Cast,
/// a Narrow that selects a contiguous block, and any op the table marks is-view), so backends emit
/// no kernel for it. The one predicate backends and the planner share.
bool is_pure_view(const ir::Graph& g, ir::NodeId id);
/// For a pure view: its byte offset into the operand's buffer.
std::int64_t view_byte_offset(const ir::Graph& g, ir::NodeId id);

/// Plans every buffer of the static graph \p g (symbols bound) in schedule order (the node list).
/// Inputs, params, constants and outputs get regions of their own; temporaries share by liveness.
ir::MemoryPlan plan_memory(const ir::Graph& g, const PlanOptions& opts = {});

/// Checks a plan against its graph: every live pair of buffers disjoint, views inside their
/// roots, alignment respected. Throws Error naming the two nodes on a violation.
void check_memory_plan(const ir::Graph& g, const ir::MemoryPlan& plan);

} // namespace rlx::compile
