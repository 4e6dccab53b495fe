// fused_norm.cpp: decompositions of the residual + norm fused ops (ResidualLayerNorm,
// ResidualRmsNorm) into Add and the norm: what unfuse, autodiff and legalisation emit. Their
// results are tuples, so the forms are parts forms (decompose_values, replace_by_values).
#include "families.hpp"

namespace rlx::ir::decompose_detail {

namespace {

// residual_layer_norm(x, r, gamma [, beta]) = (x + r, layer_norm(x + r, gamma [, beta])).
std::vector<NodeId> residual_layer_norm_by_add(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  const NodeId sum = b.add(n.inputs[0], n.inputs[1]);
  const NodeId beta = n.inputs.size() == 4 ? n.inputs[3] : NodeId{};
  return {sum, b.layer_norm(sum, n.inputs[2], beta, n.attr<NormAttrs>().eps)};
}

// residual_rms_norm(x, r, gamma) = (x + r, rms_norm(x + r, gamma)).
std::vector<NodeId> residual_rms_norm_by_add(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  const NodeId sum = b.add(n.inputs[0], n.inputs[1]);
  return {sum, b.rms_norm(sum, n.inputs[2], n.attr<NormAttrs>().eps)};
}

} // namespace

void add_fused_norm_decompositions(DecompositionTable& t) {
  t.set(OpKind::ResidualLayerNorm,
        {{"residual_layer_norm_by_add", nullptr, residual_layer_norm_by_add}});
  t.set(OpKind::ResidualRmsNorm, {{"residual_rms_norm_by_add", nullptr, residual_rms_norm_by_add}});
}

} // namespace rlx::ir::decompose_detail
