// graph_util.hpp: small graph helpers shared by the passes (private; sub-graph inlining and
// constant fills are rlx-ir's, in rlx/ir/decompose.hpp).
#pragma once

#include "rlx/ir/builder.hpp"
#include "rlx/ir/graph.hpp"

#include <string>
#include <vector>

namespace rlx::compile::detail {

/// Graph::compact(), reporting whether any node moved or was removed.
bool compact_changed(ir::Graph& g);

/// Rebuilds \p g without the nodes flagged in \p drop (indexed by NodeId::v), which must have no
/// uses; every other node keeps its order, attributes and type.
void erase_unused(ir::Graph& g, const std::vector<char>& drop);

} // namespace rlx::compile::detail
