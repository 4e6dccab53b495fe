// fused.cpp: decompositions of the fused ops rlx-fusion emits (ops.def's "fused ops" section).
// Each is the op's definition, and the reference interpreter evaluates the fused op through it
// (reference/fused.cpp), so fusing never changes the reference value of a graph. A backend that
// does not claim a fused op gets it back as these primitives (legalisation, or fusion's unfuse).
#include "families.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir::decompose_detail {

namespace {

// matmul_bias_act(a, b[, bias]) = act(matmul(a, b) + bias).
NodeId matmul_bias_act_by_parts(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  const auto& a = n.attr<MatMulBiasActAttrs>();
  NodeId y = b.matmul(n.inputs[0], n.inputs[1], a.transpose_a, a.transpose_b);
  if (n.inputs.size() == 3)
    y = b.add(y, n.inputs[2]);
  if (auto k = activation_op(a.act))
    y = b.unary(*k, y);
  return y;
}

} // namespace

void add_fused_decompositions(DecompositionTable& t) {
  t.set(OpKind::MatMulBiasAct, {{"matmul_bias_act_by_parts", matmul_bias_act_by_parts}});
}

} // namespace rlx::ir::decompose_detail
