// fused_attention.cpp: the decomposition of the fused attention block (rlx-fusion's
// fuse-attention-block) into the chain it replaces: the packed projection (MatMulBiasAct with a
// bias, MatMul without), Split, one Get and head Reshape per part, Rope of q and k, Attention in
// the bshd layout, the merging Reshape and the output projection. It is the op's reference
// semantics, so fusing the chain never changes a graph's reference values.
#include "families.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir::decompose_detail {

namespace {

/// x w (+ bias), w [N, K] when \p transpose_b.
NodeId projection(Builder& b, NodeId x, NodeId w, NodeId bias, bool transpose_b) {
  if (!bias.valid())
    return b.matmul(x, w, false, transpose_b);
  return b.op(OpKind::MatMulBiasAct, {x, w, bias},
              MatMulBiasActAttrs{false, transpose_b, Activation::none});
}

NodeId fused_attention_block_by_parts(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  const auto& a = n.attr<FusedAttentionBlockAttrs>();
  if (!float_node(b, id, why))
    return {};
  std::size_t next = 3;
  const NodeId b_qkv = a.qkv_bias ? n.inputs.at(next++) : NodeId{};
  const NodeId b_o = a.out_bias ? n.inputs.at(next++) : NodeId{};
  const NodeId mask = next < n.inputs.size() ? n.inputs[next] : NodeId{};
  const NodeId p = projection(b, n.inputs[0], n.inputs[1], b_qkv, a.qkv_transpose_b);
  const Shape ps = b.shape(p); // a copy: emitting reallocates the node list
  const std::int64_t d = ps[2].size() / (a.num_heads + 2 * a.num_kv_heads);
  const NodeId parts = b.split(p, 2, {a.num_heads * d, a.num_kv_heads * d, a.num_kv_heads * d});
  auto heads = [&](std::int64_t i, std::int64_t h) {
    return b.reshape(b.get(parts, i), {ps[0], ps[1], Dim(h), Dim(d)});
  };
  NodeId q = heads(0, a.num_heads), k = heads(1, a.num_kv_heads), v = heads(2, a.num_kv_heads);
  if (a.rope) {
    RopeAttrs r;
    r.style = a.rope_style;
    r.n_rot = a.rope_n_rot;
    r.position_offset = a.rope_position_offset;
    r.theta = a.rope_theta;
    q = b.op(OpKind::Rope, {q}, r);
    k = b.op(OpKind::Rope, {k}, r);
  }
  AttentionAttrs at;
  at.num_heads = a.num_heads;
  at.num_kv_heads = a.num_kv_heads;
  at.mask = a.mask;
  at.window = a.window;
  at.scale = a.scale;
  at.softcap = a.softcap;
  std::vector<NodeId> attn_in{q, k, v};
  if (mask.valid())
    attn_in.push_back(mask);
  const NodeId o = b.op(OpKind::Attention, attn_in, at);
  const NodeId merged = b.reshape(o, {ps[0], ps[1], Dim(a.num_heads * d)});
  return projection(b, merged, n.inputs[2], b_o, a.out_transpose_b);
}

} // namespace

void add_fused_attention_decompositions(DecompositionTable& t) {
  t.set(OpKind::FusedAttentionBlock,
        {{"fused_attention_block_by_parts", fused_attention_block_by_parts}});
}

} // namespace rlx::ir::decompose_detail
