// hir.cpp: lowering of HIR block ops to MIR primitives.
// PLACEHOLDER while the lowering is being written: every entry point throws.
#include "rlx/ir/hir.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir {

NodeId decompose_hir(Builder&, const Node& node, std::span<const NodeId>) {
  throw Error("HIR lowering of " + std::string(op_name(node.op)) + " is not implemented yet");
}

Graph lower_hir(const Graph&) { throw Error("HIR lowering is not implemented yet"); }

bool has_hir_ops(const Graph& g) {
  for (const auto& n : g.nodes())
    if (is_hir(n.op))
      return true;
  return false;
}

} // namespace rlx::ir
