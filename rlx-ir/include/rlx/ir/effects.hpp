// effects.hpp: which nodes have effects the IR cannot see (ops.def's kMayHaveEffects flag).
//
// Semantics: a node with effects is run exactly as the graph says. CSE never merges it with an
// equal node, constant folding never evaluates it at compile time, and DCE / Graph::compact()
// keep it even when nothing reads its value (it counts as a root, like a graph output); the
// memory planner gives it storage so the backend runs its kernel. Effects are not ordered by
// tokens: two nodes with effects keep the relative order of the node list, which compact()
// preserves, but a pass that reorders nodes may swap them.
#pragma once

#include "rlx/ir/graph.hpp"

namespace rlx::ir {

/// True when node \p n may have effects: its op carries kMayHaveEffects and, for a Custom node,
/// its CustomOpDef says has_effects (a Custom op that is not registered counts as having
/// effects); an op with sub-graphs has effects when any node of a sub-graph does.
bool has_effects(const Node& n);
/// has_effects of node \p id of \p g.
inline bool has_effects(const Graph& g, NodeId id) {
  return has_effects(g.node(id));
}

} // namespace rlx::ir
