// fused_layer.cpp: the decomposition of the fused transformer layer (rlx-fusion's
// fuse-transformer-layer) into the chain of fused ops it replaces: the attention block, the
// residual norms (their tuples read through get), the FFN products (MatMulBiasAct with a bias or
// an activation, MatMul without) and, for LLaMA, the first RMSNorm and the last residual Add. It is
// the op's reference semantics, so fusing the chain never changes a graph's reference values.
#include "families.hpp"

#include "rlx/ir/error.hpp"
#include "rlx/ir/fused_layer.hpp"

namespace rlx::ir::decompose_detail {

namespace {

/// act(x w (+ bias)), w [N, K] when \p transpose_b: MatMul when there is neither a bias nor an
/// activation, MatMulBiasAct otherwise (as fuse-matmul-bias-act leaves a projection).
NodeId product(Builder& b, NodeId x, NodeId w, NodeId bias, bool transpose_b, Activation act) {
  if (!bias.valid() && act == Activation::none)
    return b.matmul(x, w, false, transpose_b);
  std::vector<NodeId> in{x, w};
  if (bias.valid())
    in.push_back(bias);
  return b.op(OpKind::MatMulBiasAct, in, MatMulBiasActAttrs{false, transpose_b, act});
}

NodeId fused_transformer_layer_by_parts(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  const auto& a = n.attr<FusedTransformerLayerAttrs>();
  if (!float_node(b, id, why))
    return {};
  const LayerSlots s = layer_slots(a);
  auto in = [&](std::size_t slot) {
    return slot == LayerSlots::kAbsent ? NodeId{} : n.inputs[slot];
  };
  const bool llama = a.kind == LayerKind::llama_pre_norm;
  const NodeId x = in(s.x);
  const NodeId block_in = llama ? b.op(OpKind::RmsNorm, {x, in(s.g1)}, NormAttrs{a.eps}) : x;
  std::vector<NodeId> bin{block_in, in(s.w_qkv), in(s.w_o)};
  for (std::size_t slot : {s.b_qkv, s.b_o, s.mask})
    if (slot != LayerSlots::kAbsent)
      bin.push_back(in(slot));
  const NodeId att = b.op(OpKind::FusedAttentionBlock, bin, a.block);
  NodeId h, m;
  if (llama) {
    const NodeId t = b.op(OpKind::ResidualRmsNorm, {x, att, in(s.g2)}, NormAttrs{a.eps});
    h = b.get(t, 0);
    m = b.get(t, 1);
  } else {
    std::vector<NodeId> r{att, x, in(s.g1)};
    if (a.norm_beta)
      r.push_back(in(s.beta1));
    h = m = b.get(b.op(OpKind::ResidualLayerNorm, r, NormAttrs{a.eps}), 1);
  }
  const NodeId u = llama ? b.op(OpKind::SwiGluMatMul, {m, in(s.w_gate), in(s.w_up)},
                                SwiGluMatMulAttrs{!a.up_transpose_b})
                         : product(b, m, in(s.w_up), in(s.b_up), a.up_transpose_b, a.act);
  const NodeId d = product(b, u, in(s.w_down), in(s.b_down), a.down_transpose_b, Activation::none);
  if (llama)
    return b.add(h, d);
  std::vector<NodeId> r{d, h, in(s.g2)};
  if (a.norm_beta)
    r.push_back(in(s.beta2));
  return b.get(b.op(OpKind::ResidualLayerNorm, r, NormAttrs{a.eps}), 1);
}

} // namespace

void add_fused_layer_decompositions(DecompositionTable& t) {
  t.set(OpKind::FusedTransformerLayer,
        {{"fused_transformer_layer_by_parts", fused_transformer_layer_by_parts}});
}

} // namespace rlx::ir::decompose_detail
