// count_ops.hpp: how many nodes of an op a graph has, the structural check of the pass, lowering
// and fusion tests of every package. Link the rlx_ir_testing library and include
// "testing/count_ops.hpp".
#pragma once

#include "rlx/ir/graph.hpp"

namespace rlx::ir::testing {

/// The number of nodes of op \p k in \p g (its own nodes, not those of sub-graphs).
inline int count_ops(const Graph& g, OpKind k) {
  int n = 0;
  for (const auto& node : g.nodes())
    n += node.op == k;
  return n;
}

} // namespace rlx::ir::testing
