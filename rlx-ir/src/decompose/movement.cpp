// movement.cpp: decompositions of movement ops.
//
// Exact in IEEE arithmetic unless noted; the notes say where a form rounds differently (never more
// than a few ulps) or differs on special values. Tested in rlx-ir/tests/decompositions_test.cpp.
#include "families.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir::decompose_detail {

namespace {

// expand(x) = x * ones(target) (x and true/false selection for bool); static targets only.
NodeId expand_by_broadcast(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  if (!n.shape.is_static()) {
    why = "the target shape is symbolic; bind it first";
    return {};
  }
  NodeId x = n.inputs[0];
  if (n.shape.dtype == DType::boolean)
    return b.where(x, full_constant(b, n.shape, 1), full_constant(b, n.shape, 0));
  return b.mul(x, full_constant(b, n.shape, 1));
}

} // namespace

void add_movement_decompositions(DecompositionTable& t) {
  t.set(OpKind::Expand, {{"expand_by_broadcast", expand_by_broadcast}});
}

} // namespace rlx::ir::decompose_detail
