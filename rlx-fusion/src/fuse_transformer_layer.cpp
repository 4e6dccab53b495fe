// fuse_transformer_layer.cpp: fuse-transformer-layer. A whole transformer layer, as the earlier
// passes leave it (fuse-attention-block's block, fuse-residual-*-norm's tuples, fuse-matmul-bias-
// act's FFN products, fuse-swiglu-matmul's gate / up product), becomes one FusedTransformerLayer:
//
//   BERT post-norm (anchored at the block a = FusedAttentionBlock(x, ..)):
//     (_, h) = ResidualLayerNorm(a, x, g1 [, b1])            (either operand order)
//     u = MatMulBiasAct(h, w_up [, b_up], act) | MatMul(h, w_up)
//     d = MatMulBiasAct(u, w_down [, b_down]) | MatMul(u, w_down)
//     (_, y) = ResidualLayerNorm(d, h, g2 [, b2])            → y = layer(x, ..)
//   LLaMA pre-norm (anchored at a = FusedAttentionBlock(n, ..)):
//     n = RmsNorm(x, g1) | get 1 of ResidualRmsNorm(p, q, g1) with x = its get 0
//     (h, m) = ResidualRmsNorm(x, a, g2)
//     d = MatMul | MatMulBiasAct(SwiGluMatMul(m, w_gate, w_up), w_down [, b_down])
//     end: Add(h, d) → layer(x, ..), or the next norm ResidualRmsNorm(h, d, g3): its get 0 →
//     layer(x, ..), its get 1 → RmsNorm(layer(x, ..), g3) (the next layer's first norm).
//
// A LLaMA layer's first norm is usually the previous layer's residual norm (fuse-residual-rms-norm
// joins the previous residual Add with it). Rewriting the layers in order turns that tuple into
// the previous layer's result and a plain RmsNorm of it, which is the next layer's start; a start
// tuple whose previous layer did not fuse is split into its Add (the layer's x) and the norm the
// layer computes itself.
//
// Not a PatternPass: one rewrite replaces several values (LLaMA's end), so the pass matches,
// checks and rewrites itself, one layer at a time, and reports what the pattern driver would:
// misses of the final sweep only, each with its MissReason.
#include "rlx/fusion/transformer_fusions.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/fused_layer.hpp"

#include <optional>

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

constexpr const char* kBert = "transformer_layer_bert";
constexpr const char* kLlama = "transformer_layer_llama";

std::string what(const Graph& g, NodeId id) {
  return ir::describe(g, id);
}

/// The Get of part \p index of tuple node \p t (invalid when there is none; the fusion passes
/// build one Get per part read).
NodeId get_of(const Graph& g, NodeId t, std::int64_t index) {
  for (NodeId u : g.users(t))
    if (g.node(u).op == OpKind::Get && g.node(u).attr<ir::GetAttrs>().index == index)
      return u;
  return {};
}

/// A miss, when \p id has other uses than \p want.
std::optional<MissedFusion> uses(const Graph& g, NodeId id, int want, const char* pattern,
                                 NodeId root) {
  if (g.use_count(id) == want)
    return std::nullopt;
  const bool out = g.is_output(id);
  return MissedFusion{pattern, what(g, root),
                      out ? MissReason::is_graph_output : MissReason::multiple_consumers,
                      what(g, id) + (out ? " is a graph output" : " has other users") +
                          ": the layer would have to materialise it"};
}

/// The other operand of a residual (two-operand Add or the first two of a residual norm) when
/// one of them is \p one; invalid otherwise.
NodeId other_operand(const Graph& g, NodeId node, NodeId one) {
  const auto& in = g.node(node).inputs;
  if (in.size() < 2)
    return {};
  if (in[0] == one)
    return in[1];
  if (in[1] == one)
    return in[0];
  return {};
}

/// An FFN product: MatMul (no transpose_a) or MatMulBiasAct (no transpose_a) reading \p from.
struct Product {
  NodeId node, w, bias;
  bool transpose_b = true;
  ir::Activation act = ir::Activation::none;
};
std::optional<Product> product_of(const Graph& g, NodeId id, NodeId from) {
  if (!id.valid())
    return std::nullopt;
  const ir::Node& n = g.node(id);
  Product p{id, {}, {}, true, ir::Activation::none};
  if (n.op == OpKind::MatMul) {
    const auto& a = n.attr<ir::MatMulAttrs>();
    if (a.transpose_a)
      return std::nullopt;
    p.transpose_b = a.transpose_b;
  } else if (n.op == OpKind::MatMulBiasAct) {
    const auto& a = n.attr<ir::MatMulBiasActAttrs>();
    if (a.transpose_a)
      return std::nullopt;
    p.transpose_b = a.transpose_b;
    p.act = a.act;
    if (n.inputs.size() == 3)
      p.bias = n.inputs[2];
  } else {
    return std::nullopt;
  }
  if (n.inputs[0] != from)
    return std::nullopt;
  p.w = n.inputs[1];
  return p;
}

/// One recognised layer: its operands and attributes, and how to rewire its surroundings.
struct Layer {
  const char* pattern = kBert;
  NodeId block; ///< the anchor
  ir::FusedTransformerLayerAttrs attrs;
  std::vector<NodeId> operands; ///< in layer_slots order
  NodeId result;                ///< the value the layer replaces (BERT's get, LLaMA's Add)
  // LLaMA only:
  NodeId start_tuple; ///< the start's ResidualRmsNorm (invalid: a plain RmsNorm)
  NodeId end_tuple;   ///< the next norm (invalid: the end is an Add)
};

/// A structural match (nullopt: not this pattern, nothing to report) or a miss.
struct Found {
  std::optional<Layer> layer;
  std::optional<MissedFusion> miss;
};

/// The operands of a layer with \p a from the named values (absent ones skipped).
struct Named {
  NodeId x, w_qkv, w_o, b_qkv, b_o, g1, beta1, w_gate, w_up, b_up, w_down, b_down, g2, beta2, mask;
};
std::vector<NodeId> operands_of(const ir::FusedTransformerLayerAttrs& a, const Named& v) {
  const ir::LayerSlots s = ir::layer_slots(a);
  std::vector<NodeId> out(s.count);
  auto put = [&](std::size_t slot, NodeId id) {
    if (slot != ir::LayerSlots::kAbsent)
      out[slot] = id;
  };
  put(s.x, v.x);
  put(s.w_qkv, v.w_qkv);
  put(s.w_o, v.w_o);
  put(s.b_qkv, v.b_qkv);
  put(s.b_o, v.b_o);
  put(s.g1, v.g1);
  put(s.beta1, v.beta1);
  put(s.w_gate, v.w_gate);
  put(s.w_up, v.w_up);
  put(s.b_up, v.b_up);
  put(s.w_down, v.w_down);
  put(s.b_down, v.b_down);
  put(s.g2, v.g2);
  put(s.beta2, v.beta2);
  put(s.mask, v.mask);
  return out;
}

/// The block's operands into \p v (x excluded).
void block_operands(const Graph& g, NodeId block, Named& v) {
  const ir::Node& n = g.node(block);
  const auto& a = n.attr<ir::FusedAttentionBlockAttrs>();
  std::size_t next = 3;
  v.w_qkv = n.inputs[1];
  v.w_o = n.inputs[2];
  if (a.qkv_bias)
    v.b_qkv = n.inputs[next++];
  if (a.out_bias)
    v.b_o = n.inputs[next++];
  if (next < n.inputs.size())
    v.mask = n.inputs[next];
}

Found find_bert(const Graph& g, NodeId block) {
  Found f;
  const NodeId x = g.node(block).inputs[0];
  // Structure: the block's residual LayerNorm with x.
  NodeId t1;
  for (NodeId u : g.users(block))
    if (g.node(u).op == OpKind::ResidualLayerNorm && other_operand(g, u, block) == x)
      t1 = u;
  if (!t1.valid())
    return f;
  const NodeId h = get_of(g, t1, 1);
  if (!h.valid())
    return f;
  std::optional<Product> up, down;
  NodeId t2;
  for (NodeId u : g.users(h)) {
    if (auto p = product_of(g, u, h))
      up = p;
  }
  if (up)
    for (NodeId u : g.users(up->node))
      if (auto p = product_of(g, u, up->node))
        down = p;
  if (down)
    for (NodeId u : g.users(down->node))
      if (g.node(u).op == OpKind::ResidualLayerNorm && other_operand(g, u, down->node) == h)
        t2 = u;
  const NodeId y = t2.valid() ? get_of(g, t2, 1) : NodeId{};
  if (!y.valid())
    return f;
  auto miss = [&](MissReason r, std::string detail) {
    f.miss = MissedFusion{kBert, what(g, block), r, std::move(detail)};
    return f;
  };
  // Constraints.
  const ir::Node& n1 = g.node(t1);
  const ir::Node& n2 = g.node(t2);
  const double eps = n1.attr<ir::NormAttrs>().eps;
  if (eps != n2.attr<ir::NormAttrs>().eps || n1.inputs.size() != n2.inputs.size())
    return miss(MissReason::attribute_mismatch,
                "the two LayerNorms differ in eps or in having a beta");
  if (down->act != ir::Activation::none)
    return miss(MissReason::attribute_mismatch,
                what(g, down->node) + " has an activation (the FFN's down product has none)");
  for (auto m : {uses(g, block, 1, kBert, block), uses(g, up->node, 1, kBert, block),
                 uses(g, down->node, 1, kBert, block), uses(g, h, 2, kBert, block)})
    if (m) {
      f.miss = m;
      return f;
    }
  for (NodeId t : {t1, t2})
    if (NodeId s = get_of(g, t, 0); s.valid())
      if (auto m = uses(g, s, 0, kBert, block)) {
        f.miss = m;
        return f;
      }
  if (g.users(t1).size() != 1)
    return miss(MissReason::multiple_consumers, what(g, t1) + " has other users");
  Layer l;
  l.pattern = kBert;
  l.block = block;
  l.attrs.block = g.node(block).attr<ir::FusedAttentionBlockAttrs>();
  l.attrs.kind = ir::LayerKind::bert_post_norm;
  l.attrs.eps = eps;
  l.attrs.norm_beta = n1.inputs.size() == 4;
  l.attrs.act = up->act;
  l.attrs.up_transpose_b = up->transpose_b;
  l.attrs.up_bias = up->bias.valid();
  l.attrs.down_transpose_b = down->transpose_b;
  l.attrs.down_bias = down->bias.valid();
  Named v;
  v.x = x;
  block_operands(g, block, v);
  v.g1 = n1.inputs[2];
  v.beta1 = l.attrs.norm_beta ? n1.inputs[3] : NodeId{};
  v.w_up = up->w;
  v.b_up = up->bias;
  v.w_down = down->w;
  v.b_down = down->bias;
  v.g2 = n2.inputs[2];
  v.beta2 = l.attrs.norm_beta ? n2.inputs[3] : NodeId{};
  l.operands = operands_of(l.attrs, v);
  l.result = y;
  f.layer = l;
  return f;
}

Found find_llama(const Graph& g, NodeId block) {
  Found f;
  const NodeId n = g.node(block).inputs[0];
  const ir::Node& nn = g.node(n);
  NodeId x, start_tuple, g1;
  double eps1 = 0;
  if (nn.op == OpKind::RmsNorm) {
    x = nn.inputs[0];
    g1 = nn.inputs[1];
    eps1 = nn.attr<ir::NormAttrs>().eps;
  } else if (nn.op == OpKind::Get && nn.attr<ir::GetAttrs>().index == 1 &&
             g.node(nn.inputs[0]).op == OpKind::ResidualRmsNorm) {
    start_tuple = nn.inputs[0];
    x = get_of(g, start_tuple, 0);
    g1 = g.node(start_tuple).inputs[2];
    eps1 = g.node(start_tuple).attr<ir::NormAttrs>().eps;
  }
  if (!x.valid())
    return f;
  NodeId mt;
  for (NodeId u : g.users(block))
    if (g.node(u).op == OpKind::ResidualRmsNorm && other_operand(g, u, block) == x)
      mt = u;
  if (!mt.valid())
    return f;
  const NodeId h = get_of(g, mt, 0), m = get_of(g, mt, 1);
  if (!h.valid() || !m.valid())
    return f;
  NodeId sw;
  for (NodeId u : g.users(m))
    if (g.node(u).op == OpKind::SwiGluMatMul && g.node(u).inputs[0] == m)
      sw = u;
  if (!sw.valid())
    return f;
  std::optional<Product> down;
  for (NodeId u : g.users(sw))
    if (auto p = product_of(g, u, sw))
      down = p;
  if (!down)
    return f;
  NodeId end;
  for (NodeId u : g.users(down->node)) {
    const OpKind k = g.node(u).op;
    if ((k == OpKind::Add || k == OpKind::ResidualRmsNorm) && other_operand(g, u, down->node) == h)
      end = u;
  }
  if (!end.valid())
    return f;
  auto miss = [&](MissReason r, std::string detail) {
    f.miss = MissedFusion{kLlama, what(g, block), r, std::move(detail)};
    return f;
  };
  if (eps1 != g.node(mt).attr<ir::NormAttrs>().eps)
    return miss(MissReason::attribute_mismatch, "the two RMSNorms differ in eps");
  if (down->act != ir::Activation::none)
    return miss(MissReason::attribute_mismatch,
                what(g, down->node) + " has an activation (the FFN's down product has none)");
  if (g.shape(h) != g.shape(down->node))
    return miss(MissReason::shape_mismatch, "the FFN's result " + g.shape(down->node).str() +
                                                " is not the residual's " + g.shape(h).str());
  for (auto u : {uses(g, n, 1, kLlama, block), uses(g, block, 1, kLlama, block),
                 uses(g, m, 1, kLlama, block), uses(g, sw, 1, kLlama, block),
                 uses(g, down->node, 1, kLlama, block), uses(g, h, 1, kLlama, block)})
    if (u) {
      f.miss = u;
      return f;
    }
  if (g.users(mt).size() != 2)
    return miss(MissReason::multiple_consumers, what(g, mt) + " has other users");
  Layer l;
  l.pattern = kLlama;
  l.block = block;
  l.attrs.block = g.node(block).attr<ir::FusedAttentionBlockAttrs>();
  l.attrs.kind = ir::LayerKind::llama_pre_norm;
  l.attrs.eps = eps1;
  l.attrs.act = ir::Activation::none;
  l.attrs.up_transpose_b = !g.node(sw).attr<ir::SwiGluMatMulAttrs>().weights_kn;
  l.attrs.down_transpose_b = down->transpose_b;
  l.attrs.down_bias = down->bias.valid();
  Named v;
  v.x = x;
  block_operands(g, block, v);
  v.g1 = g1;
  v.w_gate = g.node(sw).inputs[1];
  v.w_up = g.node(sw).inputs[2];
  v.w_down = down->w;
  v.b_down = down->bias;
  v.g2 = g.node(mt).inputs[2];
  l.operands = operands_of(l.attrs, v);
  l.start_tuple = start_tuple;
  if (g.node(end).op == OpKind::Add)
    l.result = end;
  else
    l.end_tuple = end;
  f.layer = l;
  return f;
}

/// Rewrites \p l into \p g (nodes appended; the caller compacts).
void rewrite(Graph& g, Layer l) {
  ir::Builder b(g);
  if (l.start_tuple.valid()) { // the previous residual Add out of its norm: the layer's x
    const ir::Node t = g.node(l.start_tuple);
    const NodeId sum = get_of(g, l.start_tuple, 0);
    const NodeId x = b.add(t.inputs[0], t.inputs[1]);
    g.replace_all_uses(sum, x);
    l.operands[0] = x;
  }
  const std::string name = g.node(l.block).name;
  const NodeId layer = b.op(OpKind::FusedTransformerLayer, l.operands, l.attrs, name);
  if (!l.end_tuple.valid()) {
    g.replace_all_uses(l.result, layer);
    return;
  }
  const ir::Node t = g.node(l.end_tuple);
  const NodeId sum = get_of(g, l.end_tuple, 0), normed = get_of(g, l.end_tuple, 1);
  if (normed.valid())
    g.replace_all_uses(normed, b.op(OpKind::RmsNorm, {layer, t.inputs[2]}, t.attrs, t.name));
  if (sum.valid())
    g.replace_all_uses(sum, layer);
}

class FuseTransformerLayerPass final : public Pass {
public:
  std::string_view name() const override { return "fuse-transformer-layer"; }

  bool run(Graph& g, PassContext& ctx) override {
    bool changed = false;
    for (;;) {
      std::vector<MissedFusion> misses;
      bool rewritten = false;
      for (NodeId id : g.ids()) {
        if (g.node(id).op != OpKind::FusedAttentionBlock)
          continue;
        Found f = find_llama(g, id);
        if (!f.layer && !f.miss)
          f = find_bert(g, id);
        if (f.miss) {
          misses.push_back(*f.miss);
          continue;
        }
        if (!f.layer)
          continue;
        const ir::DType t = g.shape(id).dtype;
        if (ctx.claims && !ctx.claims->claims(OpKind::FusedTransformerLayer, t)) {
          misses.push_back({f.layer->pattern, what(g, id), MissReason::not_claimed,
                            "the backend does not claim fused_transformer_layer for " +
                                std::string(ir::dtype_name(t))});
          continue;
        }
        rewrite(g, *f.layer);
        g.compact();
        if (ctx.report)
          ctx.report->record_applied(f.layer->pattern);
        rewritten = changed = true;
        break; // ids changed: sweep again (a LLaMA layer's start is the previous one's end)
      }
      if (!rewritten) {
        if (ctx.report)
          for (MissedFusion& m : misses)
            ctx.report->record_missed(std::move(m));
        return changed;
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> make_fuse_transformer_layer() {
  return std::make_unique<FuseTransformerLayerPass>();
}

} // namespace rlx::fusion
