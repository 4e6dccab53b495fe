// hir.cpp: lowering of HIR block ops (Linear, AttentionBlock, SwiGluFfn, BertLayer, LlamaBlock) to
// MIR primitives.
//
// Each block is emitted as the canonical primitive chains that the fusion passes match later:
// MatMul(transpose_b) -> Add(bias) -> activation for a projection, Add -> LayerNorm / Add for a
// residual, Silu -> Mul -> MatMul for SwiGLU. Weights keep the PyTorch / HuggingFace [out, in]
// layout, so every projection is a MatMul with transpose_b set; no weight is ever transposed.
// Every emitted node is labelled "<block>.<part>" (e.g. "layer0.q_proj"), where <block> is the HIR
// node's own name, or "<mnemonic>%<id>" when it has none.
#include "rlx/ir/hir.hpp"

#include "attr_visit.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/verify.hpp"

#include <memory>
#include <string>
#include <utility>

namespace rlx::ir {
namespace {

/// Emits labelled primitives into a Builder's graph: every node gets the name prefix + "." + part.
class Emitter {
public:
  Emitter(Builder& b, std::string prefix) : b_(b), prefix_(std::move(prefix)) {}

  const Shape& shape(NodeId x) const { return b_.shape(x); }

  NodeId op(OpKind k, std::vector<NodeId> in, Attrs attrs, const std::string& part) {
    return b_.op(k, std::move(in), std::move(attrs), label(part));
  }
  NodeId unary(OpKind k, NodeId x, const std::string& part) { return op(k, {x}, NoAttrs{}, part); }
  NodeId add(NodeId a, NodeId b, const std::string& part) {
    return op(OpKind::Add, {a, b}, NoAttrs{}, part);
  }
  NodeId mul(NodeId a, NodeId b, const std::string& part) {
    return op(OpKind::Mul, {a, b}, NoAttrs{}, part);
  }
  NodeId reshape(NodeId x, std::vector<Dim> dims, const std::string& part) {
    return op(OpKind::Reshape, {x}, TargetShapeAttrs{std::move(dims)}, part);
  }

  /// \p act applied to \p x (x itself for Activation::none).
  NodeId activation(Activation act, NodeId x, const std::string& part) {
    auto k = activation_op(act);
    return k ? unary(*k, x, part) : x;
  }

  /// x · Wᵀ (+ b) for W [out, in]: MatMul(transpose_b) then Add. A rank-1 \p x is lifted to
  /// [1, in] for the MatMul and dropped back to [out] afterwards.
  NodeId project(NodeId x, NodeId w, NodeId b, const std::string& part) {
    const bool vec = shape(x).rank() == 1;
    NodeId in = vec ? reshape(x, {Dim(1), shape(x)[0]}, part + ".lift") : x;
    NodeId y = op(OpKind::MatMul, {in, w}, MatMulAttrs{false, true}, part);
    if (vec)
      y = reshape(y, {shape(w)[0]}, part + ".drop");
    return b.valid() ? add(y, b, part + ".bias") : y;
  }

private:
  std::string label(const std::string& part) const { return prefix_ + "." + part; }
  Builder& b_;
  std::string prefix_;
};

/// The operands and settings shared by AttentionBlock, BertLayer and LlamaBlock attention.
struct AttnParts {
  NodeId x, wq, wk, wv, wo;
  NodeId bq, bk, bv, bo; // invalid when the block has no biases
  NodeId mask;           // invalid unless the mask kind takes an input
  std::int64_t num_heads = 1;
  std::int64_t num_kv_heads = 1;
  MaskKind mask_kind = MaskKind::none;
  std::int64_t window = 0;
  bool rope = false;
  double rope_theta = 10000.0;
};

AttnParts projections(NodeId x, NodeId wq, NodeId wk, NodeId wv, NodeId wo) {
  AttnParts p;
  p.x = x;
  p.wq = wq;
  p.wk = wk;
  p.wv = wv;
  p.wo = wo;
  return p;
}

/// q/k/v projections, [B, S, H*D] -> [B, S, H, D], optional half-style RoPE on q and k, Attention
/// in the bshd layout, [B, S, H, D] -> [B, S, H*D], output projection.
NodeId emit_attention(Emitter& e, const AttnParts& p) {
  const Shape& xs = e.shape(p.x);
  const Dim& batch = xs[0];
  const Dim& seq = xs[1];
  const std::int64_t qdim = e.shape(p.wq)[0].size();
  const std::int64_t d = qdim / p.num_heads;

  NodeId q = e.project(p.x, p.wq, p.bq, "q_proj");
  NodeId k = e.project(p.x, p.wk, p.bk, "k_proj");
  NodeId v = e.project(p.x, p.wv, p.bv, "v_proj");
  q = e.reshape(q, {batch, seq, Dim(p.num_heads), Dim(d)}, "q_heads");
  k = e.reshape(k, {batch, seq, Dim(p.num_kv_heads), Dim(d)}, "k_heads");
  v = e.reshape(v, {batch, seq, Dim(p.num_kv_heads), Dim(d)}, "v_heads");
  if (p.rope) {
    RopeAttrs r;
    r.layout = AttnLayout::bshd;
    r.style = RopeStyle::half;
    r.theta = p.rope_theta;
    q = e.op(OpKind::Rope, {q}, r, "q_rope");
    k = e.op(OpKind::Rope, {k}, r, "k_rope");
  }
  AttentionAttrs a;
  a.layout = AttnLayout::bshd;
  a.num_heads = p.num_heads;
  a.num_kv_heads = p.num_kv_heads;
  a.mask = p.mask_kind;
  a.window = p.window;
  std::vector<NodeId> in{q, k, v};
  if (p.mask.valid())
    in.push_back(p.mask);
  NodeId ctx = e.op(OpKind::Attention, std::move(in), a, "attention");
  ctx = e.reshape(ctx, {batch, seq, Dim(qdim)}, "merge_heads");
  return e.project(ctx, p.wo, p.bo, "o_proj");
}

/// silu(x Wgᵀ) * (x Wuᵀ), then · Wdᵀ.
NodeId emit_swiglu(Emitter& e, NodeId x, NodeId wg, NodeId wu, NodeId wd) {
  NodeId gate = e.project(x, wg, {}, "gate_proj");
  NodeId up = e.project(x, wu, {}, "up_proj");
  NodeId h = e.mul(e.unary(OpKind::Silu, gate, "gate_act"), up, "gate_mul");
  return e.project(h, wd, {}, "down_proj");
}

bool takes_mask(MaskKind m) {
  return m == MaskKind::padding || m == MaskKind::bias;
}

void expect_arity(const Node& node, std::span<const NodeId> args, std::size_t want,
                  const std::string& prefix) {
  if (args.size() != want)
    throw Error("HIR lowering of " + std::string(op_name(node.op)) + " '" + prefix + "': expects " +
                std::to_string(want) + " operands, got " + std::to_string(args.size()));
}

NodeId lower_linear(Emitter& e, const Node& node, std::span<const NodeId> a) {
  NodeId y = e.project(a[0], a[1], a.size() == 3 ? a[2] : NodeId{}, "proj");
  return e.activation(node.attr<LinearAttrs>().act, y, "act");
}

NodeId lower_attention_block(Emitter& e, const Node& node, std::span<const NodeId> a,
                             const std::string& prefix) {
  const auto& at = node.attr<AttentionBlockAttrs>();
  expect_arity(node, a, 5 + (at.bias ? 4 : 0) + (takes_mask(at.mask) ? 1 : 0), prefix);
  AttnParts p = projections(a[0], a[1], a[2], a[3], a[4]);
  if (at.bias) {
    p.bq = a[5];
    p.bk = a[6];
    p.bv = a[7];
    p.bo = a[8];
  }
  if (takes_mask(at.mask))
    p.mask = a.back();
  p.num_heads = at.num_heads;
  p.num_kv_heads = at.num_kv_heads;
  p.mask_kind = at.mask;
  p.window = at.window;
  p.rope = at.rope;
  p.rope_theta = at.rope_theta;
  return emit_attention(e, p);
}

NodeId lower_bert_layer(Emitter& e, const Node& node, std::span<const NodeId> a,
                        const std::string& prefix) {
  const auto& at = node.attr<BertLayerAttrs>();
  expect_arity(node, a, at.padding_mask ? 18 : 17, prefix);
  const NodeId x = a[0];
  AttnParts p = projections(x, a[1], a[3], a[5], a[7]);
  p.bq = a[2];
  p.bk = a[4];
  p.bv = a[6];
  p.bo = a[8];
  p.num_heads = at.num_heads;
  p.num_kv_heads = at.num_heads;
  if (at.padding_mask) {
    p.mask_kind = MaskKind::padding;
    p.mask = a[17];
  }
  NodeId attn = emit_attention(e, p);
  // HF BertSelfOutput: LayerNorm(dense(ctx) + input); BertOutput likewise.
  NodeId h1 = e.op(OpKind::LayerNorm, {e.add(attn, x, "attn_residual"), a[9], a[10]},
                   NormAttrs{at.eps}, "attn_norm");
  NodeId f = e.activation(at.act, e.project(h1, a[11], a[12], "ffn_in"), "ffn_act");
  f = e.project(f, a[13], a[14], "ffn_out");
  return e.op(OpKind::LayerNorm, {e.add(f, h1, "ffn_residual"), a[15], a[16]}, NormAttrs{at.eps},
              "ffn_norm");
}

NodeId lower_llama_block(Emitter& e, const Node& node, std::span<const NodeId> a,
                         const std::string& prefix) {
  const auto& at = node.attr<LlamaBlockAttrs>();
  expect_arity(node, a, 10, prefix);
  const NodeId x = a[0];
  NodeId xn = e.op(OpKind::RmsNorm, {x, a[1]}, NormAttrs{at.eps}, "attn_norm");
  AttnParts p = projections(xn, a[2], a[3], a[4], a[5]);
  p.num_heads = at.num_heads;
  p.num_kv_heads = at.num_kv_heads;
  p.mask_kind = MaskKind::causal;
  p.rope = true;
  p.rope_theta = at.rope_theta;
  // HF LlamaDecoderLayer: residual + attn(norm(x)), then residual + mlp(norm(h)).
  NodeId h = e.add(x, emit_attention(e, p), "attn_residual");
  NodeId hn = e.op(OpKind::RmsNorm, {h, a[6]}, NormAttrs{at.eps}, "ffn_norm");
  return e.add(h, emit_swiglu(e, hn, a[7], a[8], a[9]), "ffn_residual");
}

/// Number of HIR rows in ops.def: a new HIR op must get a case in emit_block.
constexpr int kNumHirOps = 0
#define RLX_OP(Name, mnemonic, min_arity, max_arity, AttrsT, rule, fusion, flags, doc)             \
  +((static_cast<std::uint32_t>(flags) & kHir) != 0 ? 1 : 0)
#include "rlx/ir/ops.def"
    ;
static_assert(kNumHirOps == 5, "a HIR op was added to ops.def: give it a lowering in emit_block");

NodeId emit_block(Emitter& e, const Node& node, std::span<const NodeId> a,
                  const std::string& prefix) {
  switch (node.op) {
  case OpKind::Linear:
    return lower_linear(e, node, a);
  case OpKind::AttentionBlock:
    return lower_attention_block(e, node, a, prefix);
  case OpKind::SwiGluFfn:
    expect_arity(node, a, 4, prefix);
    return emit_swiglu(e, a[0], a[1], a[2], a[3]);
  case OpKind::BertLayer:
    return lower_bert_layer(e, node, a, prefix);
  case OpKind::LlamaBlock:
    return lower_llama_block(e, node, a, prefix);
  default:
    break;
  }
  throw Error("decompose_hir: " + std::string(op_name(node.op)) + " '" + prefix +
              "' is not a HIR block op");
}

/// The label prefix of a HIR node: its own name, else "<mnemonic>%<id>".
std::string block_prefix(const Node& node, std::size_t index) {
  if (!node.name.empty())
    return node.name;
  return std::string(op_name(node.op)) + "%" + std::to_string(index);
}

bool graph_has_hir(const Graph& g);

/// True when one of \p n's sub-graph attributes holds a HIR op.
bool subgraphs_have_hir(const Node& n) {
  if (!has_flag(n.op, kSubgraphs))
    return false;
  bool found = false;
  detail::visit_attr_fields(n.attrs, [&](std::string_view, const auto& f) {
    if constexpr (std::is_same_v<std::decay_t<decltype(f)>, SubGraph>)
      found = found || (f && graph_has_hir(*f));
  });
  return found;
}

bool graph_has_hir(const Graph& g) {
  for (const auto& n : g.nodes())
    if (is_hir(n.op) || subgraphs_have_hir(n))
      return true;
  return false;
}

Graph lower_graph(const Graph& hir);

/// \p attrs with every sub-graph that holds HIR ops replaced by its lowering.
Attrs lower_subgraphs(Attrs attrs) {
  detail::visit_attr_fields(attrs, [&](std::string_view, auto& f) {
    if constexpr (std::is_same_v<std::decay_t<decltype(f)>, SubGraph>)
      if (f && graph_has_hir(*f))
        f.graph = std::make_shared<const Graph>(lower_graph(*f));
  });
  return attrs;
}

Graph lower_graph(const Graph& hir) {
  Graph mir(hir.name());
  Builder b(mir);
  std::vector<NodeId> remap(hir.size());
  std::vector<NodeId> args;
  for (std::size_t i = 0; i < hir.size(); ++i) {
    const Node& n = hir.nodes()[i];
    args.clear();
    for (NodeId in : n.inputs)
      args.push_back(remap[in.v]);
    if (is_hir(n.op)) {
      if (n.name.empty()) {
        Node named = n;
        named.name = block_prefix(n, i);
        remap[i] = decompose_hir(b, named, args);
      } else {
        remap[i] = decompose_hir(b, n, args);
      }
    } else {
      Attrs attrs = has_flag(n.op, kSubgraphs) ? lower_subgraphs(n.attrs) : n.attrs;
      remap[i] = mir.add(n.op, args, std::move(attrs), n.name);
    }
  }
  std::vector<NodeId> outs;
  for (NodeId o : hir.outputs())
    outs.push_back(remap[o.v]);
  mir.set_outputs(std::move(outs));
  return mir;
}

} // namespace

NodeId decompose_hir(Builder& b, const Node& node, std::span<const NodeId> args) {
  const std::string prefix = node.name.empty() ? std::string(op_name(node.op)) : node.name;
  Emitter e(b, prefix);
  for (NodeId a : args)
    if (!a.valid() || a.v >= b.graph().size())
      throw Error("HIR lowering of " + std::string(op_name(node.op)) + " '" + prefix +
                  "': operand id " + (a.valid() ? "%" + std::to_string(a.v) : "<invalid>") +
                  " is not in the target graph");
  if (!is_hir(node.op))
    throw Error("decompose_hir: " + std::string(op_name(node.op)) + " '" + prefix +
                "' is not a HIR block op");
  // Re-derive the block's type first: it checks arity, weight shapes and attributes, so the
  // decomposition below only ever sees well-formed operands.
  std::vector<Shape> shapes;
  for (NodeId a : args)
    shapes.push_back(b.shape(a));
  const Shape want = infer_shape(node.op, shapes, node.attrs);
  const NodeId out = emit_block(e, node, args, prefix);
  if (!(b.shape(out) == want))
    throw Error("HIR lowering of " + std::string(op_name(node.op)) + " '" + prefix + "' produced " +
                b.shape(out).str() + " instead of " + want.str());
  return out;
}

Graph lower_hir(const Graph& hir) {
  verify(hir);
  Graph mir = lower_graph(hir);
  verify(mir, VerifyOptions{.allow_hir = false});
  return mir;
}

bool has_hir_ops(const Graph& g) {
  return graph_has_hir(g);
}

} // namespace rlx::ir
