// liveness.hpp: buffer roots, needed values and live ranges over a schedule (private).
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace rlx::compile::detail {

/// What the memory planner and the plan checker know about every node of a graph run in one
/// schedule. Steps are positions in the schedule; every vector is indexed by NodeId::v.
struct Liveness {
  std::int32_t steps = 0;        ///< schedule length
  std::vector<std::int32_t> pos; ///< step at which the node runs
  std::vector<ir::NodeId> root;  ///< the buffer owner: the node itself, or a view chain's root
  std::vector<std::int64_t> view_offset; ///< byte offset into root's buffer (0 for non-views)
  std::vector<bool> view;                ///< is_pure_view
  std::vector<bool> needed;      ///< a graph output, a node with effects, or read by a needed node
  std::vector<bool> output_root; ///< owns the buffer of a graph output (directly or via views)
  /// Live range [first, last] of the buffer a root owns: from its own step to the last step of a
  /// needed reader of it or of any view of it (closed, so an operand and its user's result are
  /// live together and never share bytes). Meaningful for roots only.
  std::vector<std::int32_t> first, last;
};

/// Analyses \p g run in order \p schedule (each node exactly once, operands before users). Throws
/// Error naming the node on a dangling edge, a repeated or missing node, or an operand scheduled
/// after its user (a cycle).
Liveness analyze_liveness(const ir::Graph& g, std::span<const ir::NodeId> schedule);

/// Throws Error when \p g still has symbolic dims (\p who names the caller in the message).
void require_static(const ir::Graph& g, const char* who);

/// \returns \p v rounded up to a multiple of \p alignment (a power of two).
inline std::int64_t align_up(std::int64_t v, std::int64_t alignment) {
  return (v + alignment - 1) & ~(alignment - 1);
}

/// Throws Error unless \p alignment is a positive power of two.
void require_alignment(std::int64_t alignment, const char* who);

} // namespace rlx::compile::detail
