// fuse_attention_block.cpp: fuse-attention-block. The attention sub-layer as the earlier passes
// leave it (fuse-shared-input-matmul's packed Q / K / V projection, fuse-matmul-bias-act's bias
// epilogues, fuse-attention's bshd Attention, rlx's own lowering):
//
//   p = MatMul | MatMulBiasAct(x, w_qkv [, b_qkv])           (no activation)
//   q, k, v = Reshape([B, S, heads, D], Get(Split(p), 0 | 1 | 2))
//   q, k = Rope(q), Rope(k)                                   (optional, one Rope attrs for both)
//   a = Attention_bshd(q, k, v [, mask])                      (every mask kind, GQA, scale,
//   softcap) out = MatMul | MatMulBiasAct(Reshape([B, S, H D], a), w_o [, b_o])
//
// becomes FusedAttentionBlock(x, w_qkv, w_o [, b_qkv] [, b_o] [, mask]), rooted at the output
// projection. The structure (op kinds and how they connect) decides whether a node is this
// pattern; every other precondition is a constraint whose failure is a reported miss.
#include "rlx/fusion/transformer_fusions.hpp"

#include <array>

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// The nodes of one recognised attention block.
struct Block {
  NodeId out;                    ///< the output projection (the root)
  NodeId merge;                  ///< Reshape of the attention to [B, S, H D]
  NodeId attn;                   ///< the Attention
  std::array<NodeId, 3> heads{}; ///< the q, k, v Reshapes to [B, S, heads, D]
  std::array<NodeId, 2> ropes{}; ///< Rope of q and of k (invalid when absent)
  std::array<NodeId, 3> gets{};  ///< the Gets feeding the Reshapes
  NodeId split;                  ///< the Split of the packed projection
  NodeId proj;                   ///< the packed projection
};

bool is_projection_op(const Graph& g, NodeId id) {
  const OpKind k = g.node(id).op;
  return k == OpKind::MatMul || k == OpKind::MatMulBiasAct;
}

/// (transpose_a, transpose_b, act) of a MatMul or MatMulBiasAct.
struct ProjFlags {
  bool ta, tb;
  ir::Activation act;
};
ProjFlags flags_of(const Graph& g, NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op == OpKind::MatMul) {
    const auto& a = n.attr<ir::MatMulAttrs>();
    return {a.transpose_a, a.transpose_b, ir::Activation::none};
  }
  const auto& a = n.attr<ir::MatMulBiasActAttrs>();
  return {a.transpose_a, a.transpose_b, a.act};
}

/// The block rooted at output projection \p root, when the structure is there.
std::optional<Block> find_block(const Graph& g, NodeId root) {
  Block b;
  b.out = root;
  if (!is_projection_op(g, root))
    return std::nullopt;
  b.merge = g.node(root).inputs[0];
  if (g.node(b.merge).op != OpKind::Reshape)
    return std::nullopt;
  b.attn = g.node(b.merge).inputs[0];
  if (g.node(b.attn).op != OpKind::Attention)
    return std::nullopt;
  for (std::size_t i = 0; i < 3; ++i) {
    NodeId v = g.node(b.attn).inputs[i];
    if (i < 2 && g.node(v).op == OpKind::Rope) {
      b.ropes[i] = v;
      v = g.node(v).inputs[0];
    }
    if (g.node(v).op != OpKind::Reshape)
      return std::nullopt;
    b.heads[i] = v;
    b.gets[i] = g.node(v).inputs[0];
    const ir::Node& get = g.node(b.gets[i]);
    if (get.op != OpKind::Get || g.node(get.inputs[0]).op != OpKind::Split)
      return std::nullopt;
    if (i > 0 && get.inputs[0] != b.split)
      return std::nullopt;
    b.split = get.inputs[0];
  }
  b.proj = g.node(b.split).inputs[0];
  if (!is_projection_op(g, b.proj))
    return std::nullopt;
  return b;
}

std::string what(const Graph& g, NodeId id) {
  return std::string(ir::op_name(g.node(id).op)) + " %" + std::to_string(id.v) +
         (g.node(id).name.empty() ? "" : " '" + g.node(id).name + "'");
}

/// A use-count miss when \p id has other uses than \p want.
std::optional<Miss> uses(const Graph& g, NodeId id, int want) {
  if (g.use_count(id) == want)
    return std::nullopt;
  const bool out = g.is_output(id);
  return Miss{out ? MissReason::is_graph_output : MissReason::multiple_consumers,
              what(g, id) + (out ? " is a graph output" : " has other users") +
                  ": the block would have to materialise it"};
}

std::optional<Miss> check_block(const Graph& g, const Block& b) {
  const ir::Shape& x = g.shape(g.node(b.proj).inputs[0]);
  for (NodeId p : {b.proj, b.out}) {
    const ProjFlags f = flags_of(g, p);
    if (f.ta || f.act != ir::Activation::none)
      return Miss{MissReason::attribute_mismatch,
                  what(g, p) + " transposes its input or has an activation"};
    if (g.shape(g.node(p).inputs[1]).rank() != 2)
      return Miss{MissReason::shape_mismatch, what(g, p) + ": the weight is not 2-D"};
  }
  if (x.rank() != 3)
    return Miss{MissReason::shape_mismatch, "x " + x.str() + " is not [B, S, E]"};
  const auto& at = g.node(b.attn).attr<ir::AttentionAttrs>();
  if (at.layout != ir::AttnLayout::bshd)
    return Miss{MissReason::attribute_mismatch,
                what(g, b.attn) + " is in the bhsd layout, not the heads of the packed projection"};
  // The parts: q, k, v in this order, of H D, KVH D, KVH D features, viewed as [B, S, heads, D].
  const ir::Node& split = g.node(b.split);
  const auto& sa = split.attr<ir::SplitAttrs>();
  const std::int64_t pr = static_cast<std::int64_t>(g.shape(b.proj).rank());
  if ((sa.axis != pr - 1 && sa.axis != -1) || sa.sizes.size() != 3)
    return Miss{MissReason::shape_mismatch,
                what(g, b.split) + " is not three parts along the last axis"};
  const ir::Shape& qs = g.shape(b.heads[0]);
  if (!qs[3].is_static())
    return Miss{MissReason::shape_mismatch, "the head_dim of " + qs.str() + " is symbolic"};
  const std::int64_t d = qs[3].size();
  const std::array<std::int64_t, 3> h{at.num_heads, at.num_kv_heads, at.num_kv_heads};
  for (std::int64_t i = 0; i < 3; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    if (g.node(b.gets[iu]).attr<ir::GetAttrs>().index != i)
      return Miss{MissReason::operand_mismatch,
                  "attention operand " + std::to_string(i) + " reads part " +
                      std::to_string(g.node(b.gets[iu]).attr<ir::GetAttrs>().index) +
                      " of the packed projection (the block takes q, k, v in order)"};
    const ir::Shape& hs = g.shape(b.heads[iu]);
    if (sa.sizes[iu] != h[iu] * d || !(hs[0] == x[0]) || !(hs[1] == x[1]) || !(hs[2] == h[iu]) ||
        !(hs[3] == d))
      return Miss{MissReason::shape_mismatch, what(g, b.heads[iu]) + " " + hs.str() +
                                                  " is not [B, S, heads, head_dim] of " +
                                                  "its part of the packed projection"};
  }
  const ir::Shape& ms = g.shape(b.merge);
  if (ms.rank() != 3 || !(ms[0] == x[0]) || !(ms[1] == x[1]))
    return Miss{MissReason::shape_mismatch,
                what(g, b.merge) + " " + ms.str() + " is not [B, S, H D]"};
  // RoPE on both q and k with one set of attrs in the bshd layout, or on neither.
  if (b.ropes[0].valid() != b.ropes[1].valid())
    return Miss{MissReason::attribute_mismatch, "RoPE turns only one of q and k"};
  if (b.ropes[0].valid()) {
    const auto& r0 = g.node(b.ropes[0]).attr<ir::RopeAttrs>();
    if (!(r0 == g.node(b.ropes[1]).attr<ir::RopeAttrs>()) || r0.layout != ir::AttnLayout::bshd)
      return Miss{MissReason::attribute_mismatch,
                  "the Ropes of q and k differ or are not in the bshd layout"};
  }
  // Every inner value is used by the next stage only.
  if (g.users(b.split).size() != 3)
    return Miss{MissReason::multiple_consumers, what(g, b.split) + " has other users"};
  for (NodeId id : {b.proj, b.attn, b.merge})
    if (auto m = uses(g, id, 1))
      return m;
  for (std::size_t i = 0; i < 3; ++i) {
    if (auto m = uses(g, b.gets[i], 1))
      return m;
    if (auto m = uses(g, b.heads[i], 1))
      return m;
  }
  for (NodeId r : b.ropes)
    if (r.valid())
      if (auto m = uses(g, r, 1))
        return m;
  return std::nullopt;
}

NodeId emit_block(ir::Builder& bld, const Match& m) {
  const Graph& g = bld.graph();
  const Block b = *find_block(g, m.root);
  const ir::Node proj = g.node(b.proj), out = g.node(b.out), attn = g.node(b.attn);
  const auto& at = attn.attr<ir::AttentionAttrs>();
  ir::FusedAttentionBlockAttrs a;
  a.num_heads = at.num_heads;
  a.num_kv_heads = at.num_kv_heads;
  a.mask = at.mask;
  a.window = at.window;
  a.scale = at.scale;
  a.softcap = at.softcap;
  a.qkv_transpose_b = flags_of(g, b.proj).tb;
  a.out_transpose_b = flags_of(g, b.out).tb;
  a.qkv_bias = proj.inputs.size() == 3;
  a.out_bias = out.inputs.size() == 3;
  if (b.ropes[0].valid()) {
    const auto& r = g.node(b.ropes[0]).attr<ir::RopeAttrs>();
    a.rope = true;
    a.rope_style = r.style;
    a.rope_n_rot = r.n_rot;
    a.rope_position_offset = r.position_offset;
    a.rope_theta = r.theta;
  }
  std::vector<NodeId> in{proj.inputs[0], proj.inputs[1], out.inputs[1]};
  if (a.qkv_bias)
    in.push_back(proj.inputs[2]);
  if (a.out_bias)
    in.push_back(out.inputs[2]);
  if (attn.inputs.size() == 4)
    in.push_back(attn.inputs[3]);
  return bld.op(OpKind::FusedAttentionBlock, in, a, out.name);
}

Pattern block_pattern(OpKind root, const char* name) {
  Pattern p;
  p.name = name;
  p.root = Pat::op(root);
  p.root.structurally([](const Graph& g, NodeId id) { return find_block(g, id).has_value(); });
  p.check = [](const Graph& g, const Match& m) { return check_block(g, *find_block(g, m.root)); };
  p.emits = {OpKind::FusedAttentionBlock};
  p.rewrite = emit_block;
  return p;
}

} // namespace

std::vector<Pattern> attention_block_patterns() {
  return {block_pattern(OpKind::MatMulBiasAct, "attention_block"),
          block_pattern(OpKind::MatMul, "attention_block_matmul")};
}

} // namespace rlx::fusion
