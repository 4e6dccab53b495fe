// hir.hpp: lowering of HIR block ops (Linear, AttentionBlock, SwiGluFfn, BertLayer, LlamaBlock)
// to MIR primitives.
#pragma once

#include "rlx/ir/builder.hpp"
#include "rlx/ir/graph.hpp"

#include <span>

namespace rlx::ir {

/// Emits the MIR primitives of HIR node \p node into \p b, reading its operands from \p args.
/// \returns the node computing the block's value.
NodeId decompose_hir(Builder& b, const Node& node, std::span<const NodeId> args);

/// \returns \p hir with every HIR block op replaced by its decomposition (a MIR graph: same inputs,
/// params and outputs, verified).
Graph lower_hir(const Graph& hir);

/// \returns true when \p g contains a HIR block op.
bool has_hir_ops(const Graph& g);

} // namespace rlx::ir
