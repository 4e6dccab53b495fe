// fuse_attention.cpp: fuse-attention, attention spelled in primitives (as ONNX exporters emit it)
// → the Attention op.
//
//   MatMul(Softmax(last axis)( [Add(mask)] ( [Mul|Div scalar] ( MatMul(Q, K^T) ))), V)
//
// K^T is spelled as MatMul's transpose_b flag, as a Transpose of K's last two axes, or as a
// Transpose {0,2,3,1} of a [B, S, H, D] key (the HF export). The result is Attention in the bhsd
// layout (scale = the spelled constant, 1 when there is none; mask kind bias for an additive mask).
// A second pattern moves Attention to the bshd layout when its Q / K / V are Transposes {0,2,1,3}
// and its result is transposed back by {0,2,1,3}: the kernel then reads the projections directly.
// A third turns an additive mask that is exactly the causal pattern (0 where key j <= query i +
// Sk - Sq, -inf elsewhere), a Constant or Narrows of one (the exported `causal[:S, :S]` of a
// registered buffer), into mask kind causal: the mask operand and its Narrows disappear.
#include "rlx/fusion/transformer_fusions.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>
#include <optional>

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// How K^T is spelled.
enum class KForm : std::uint8_t { transpose_b, swap_last, bshd };

/// The parts of a recognised attention spelling.
struct Spelling {
  NodeId q, k, v; ///< k as spelled (before any transpose the rewrite adds)
  KForm kform = KForm::transpose_b;
  NodeId mask;                 ///< invalid when there is none
  std::optional<double> scale; ///< the spelled factor (1 / c for a division)
  NodeId scores;               ///< MatMul(Q, K^T)
  std::vector<NodeId> inner;   ///< the nodes between scores and softmax (scale, mask add)
};

bool is_perm(const Graph& g, NodeId id, std::initializer_list<std::int64_t> perm) {
  const ir::Node& n = g.node(id);
  return n.op == OpKind::Transpose &&
         n.attr<ir::TransposeAttrs>().perm == std::vector<std::int64_t>(perm);
}

std::optional<double> scalar_constant(const Graph& g, NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op != OpKind::Constant)
    return std::nullopt;
  const ir::Tensor& t = n.attr<ir::ConstantAttrs>().value;
  if (t.numel() != 1 || !ir::is_float(t.dtype()))
    return std::nullopt;
  return t.get_f64(0);
}

/// MatMul(Q, K^T) in one of its spellings.
bool scores(const Graph& g, NodeId id, Spelling& s) {
  const ir::Node& n = g.node(id);
  if (n.op != OpKind::MatMul || n.attr<ir::MatMulAttrs>().transpose_a)
    return false;
  s.scores = id;
  s.q = n.inputs[0];
  const NodeId kk = n.inputs[1];
  if (n.attr<ir::MatMulAttrs>().transpose_b) {
    s.kform = KForm::transpose_b;
    s.k = kk;
    return true;
  }
  if (is_perm(g, kk, {0, 1, 3, 2})) {
    s.kform = KForm::swap_last;
    s.k = g.node(kk).inputs[0];
    return true;
  }
  if (is_perm(g, kk, {0, 2, 3, 1})) {
    s.kform = KForm::bshd;
    s.k = g.node(kk).inputs[0];
    return true;
  }
  return false;
}

/// [scale ·] MatMul(Q, K^T).
bool scaled(const Graph& g, NodeId id, Spelling& s) {
  const ir::Node& n = g.node(id);
  if (n.op == OpKind::MatMul)
    return scores(g, id, s);
  if (n.op == OpKind::Mul)
    for (int i = 0; i < 2; ++i)
      if (auto c = scalar_constant(g, n.inputs[1 - i]);
          c && g.node(n.inputs[i]).op == OpKind::MatMul && scores(g, n.inputs[i], s)) {
        s.scale = *c;
        s.inner.push_back(id);
        return true;
      }
  if (n.op == OpKind::Div)
    if (auto c = scalar_constant(g, n.inputs[1]);
        c && g.node(n.inputs[0]).op == OpKind::MatMul && scores(g, n.inputs[0], s)) {
      s.scale = 1.0 / *c;
      s.inner.push_back(id);
      return true;
    }
  return false;
}

/// The spelling rooted at MatMul \p root, or nothing when \p root is not attention.
std::optional<Spelling> analyse(const Graph& g, NodeId root) {
  const ir::Node& r = g.node(root);
  if (r.op != OpKind::MatMul) // (the pattern's root kind; checked for direct callers)
    return std::nullopt;
  const auto& ra = r.attr<ir::MatMulAttrs>();
  if (ra.transpose_a || ra.transpose_b || g.node(r.inputs[0]).op != OpKind::Softmax)
    return std::nullopt;
  Spelling s;
  s.v = r.inputs[1];
  const NodeId x = g.node(r.inputs[0]).inputs[0];
  const ir::Node& xn = g.node(x);
  if (xn.op == OpKind::Add) {
    for (int i = 0; i < 2; ++i) {
      Spelling t = s;
      if (scaled(g, xn.inputs[i], t)) {
        t.mask = xn.inputs[1 - i];
        t.inner.push_back(x);
        return t;
      }
    }
    return std::nullopt;
  }
  if (scaled(g, x, s))
    return s;
  return std::nullopt;
}

std::optional<Miss> fail(MissReason r, std::string d) {
  return Miss{r, std::move(d)};
}

/// The constraints of a recognised spelling, as a miss.
std::optional<Miss> check_spelling(const Graph& g, const Spelling& s) {
  std::vector<NodeId> inner = s.inner;
  inner.push_back(s.scores);
  for (NodeId id : inner)
    if (g.use_count(id) != 1)
      return fail(g.output_uses(id) > 0 ? MissReason::is_graph_output
                                        : MissReason::multiple_consumers,
                  ir::describe(g, id) + " has other uses");
  const ir::Shape& q = g.shape(s.q);
  const ir::Shape& k = g.shape(s.k);
  const ir::Shape& v = g.shape(s.v);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return fail(MissReason::shape_mismatch, "Q " + q.str() + ", K " + k.str() + ", V " + v.str() +
                                                " are not all 4-D [B, H, S, D]");
  const ir::Dim kb = k[0], kh = s.kform == KForm::bshd ? k[2] : k[1];
  if (!(kb == q[0]) || !(v[0] == q[0]))
    return fail(MissReason::shape_mismatch,
                "Q, K and V batch dims differ (" + q.str() + ", " + k.str() + ", " + v.str() + ")");
  if (!q[1].is_static() || !kh.is_static())
    return fail(MissReason::shape_mismatch, "the head counts are symbolic");
  if (!(kh == v[1]) || !(kh == q[1] || kh.size() == 1))
    return fail(MissReason::shape_mismatch, "K / V heads (" + kh.str() + ", " + v[1].str() +
                                                ") against Q heads " + q[1].str() +
                                                " are not H or 1");
  if (s.mask.valid() && !(g.shape(s.inner.back()).dims == g.shape(s.scores).dims))
    return fail(MissReason::shape_mismatch, "the mask " + g.shape(s.mask).str() +
                                                " broadcasts the scores " +
                                                g.shape(s.scores).str() + " up");
  if (s.scale && (!std::isfinite(*s.scale) || *s.scale == 0))
    return fail(MissReason::attribute_mismatch, "the scale is not finite and nonzero");
  return std::nullopt;
}

NodeId emit_attention(ir::Builder& b, const Spelling& s, NodeId root) {
  const Graph& g = b.graph();
  const ir::Shape q = g.shape(s.q);
  const ir::Shape k = g.shape(s.k);
  const std::string name = g.node(root).name;
  ir::AttentionAttrs a;
  a.layout = ir::AttnLayout::bhsd;
  a.num_heads = q[1].size();
  a.num_kv_heads = (s.kform == KForm::bshd ? k[2] : k[1]).size();
  a.mask = s.mask.valid() ? ir::MaskKind::bias : ir::MaskKind::none;
  a.scale = s.scale.value_or(1.0);
  const NodeId key = s.kform == KForm::bshd ? b.transpose(s.k, {0, 2, 1, 3}) : s.k;
  std::vector<NodeId> in{s.q, key, s.v};
  if (s.mask.valid())
    in.push_back(s.mask);
  return b.op(OpKind::Attention, std::move(in), a, name);
}

/// Transpose {0,2,1,3} of \p id's operand \p i, or invalid.
NodeId untransposed(const Graph& g, NodeId id, std::size_t i) {
  const NodeId t = g.node(id).inputs[i];
  return is_perm(g, t, {0, 2, 1, 3}) ? g.node(t).inputs[0] : NodeId{};
}

/// \p id with its Narrows walked down: the Constant they window, or invalid.
NodeId narrowed_constant(const Graph& g, NodeId id) {
  while (g.node(id).op == OpKind::Narrow)
    id = g.node(id).inputs[0];
  return g.node(id).op == OpKind::Constant ? id : NodeId{};
}

/// The query and key lengths of an Attention node (by its layout).
std::pair<ir::Dim, ir::Dim> query_key_lengths(const Graph& g, NodeId attn) {
  const ir::Node& n = g.node(attn);
  const std::size_t s = n.attr<ir::AttentionAttrs>().layout == ir::AttnLayout::bhsd ? 2 : 1;
  return {g.shape(n.inputs[0])[s], g.shape(n.inputs[1])[s]};
}

/// Whether \p mask (a Constant, or Narrows of one) holds exactly the causal bias of a [Sq, Sk]
/// score matrix: leading dims 1, then [Sq, Sk] with 0 where j <= i + Sk - Sq and -inf elsewhere.
/// Sk >= Sq, so every row keeps a key (the bias and the causal kind then agree exactly). Every
/// entry of the window the Narrows select is read.
bool is_causal_bias(const Graph& g, NodeId mask, ir::Dim sq_dim, ir::Dim sk_dim) {
  const ir::Shape& ms = g.shape(mask);
  if (!ir::is_float(ms.dtype) || ms.rank() < 2 || !ms.is_static() || !sq_dim.is_static() ||
      !sk_dim.is_static())
    return false;
  const std::int64_t sq = sq_dim.size(), sk = sk_dim.size();
  if (sk < sq || ms[ms.rank() - 2].size() != sq || ms[ms.rank() - 1].size() != sk)
    return false;
  for (std::size_t d = 0; d + 2 < ms.rank(); ++d)
    if (ms[d].size() != 1)
      return false;
  // Walk the Narrows down to the Constant, summing the window's offset per axis.
  std::vector<std::int64_t> offset(ms.rank(), 0);
  NodeId id = mask;
  while (g.node(id).op == OpKind::Narrow) {
    const auto& a = g.node(id).attr<ir::NarrowAttrs>();
    const std::int64_t ax = ir::normalize_axis(a.axis, ms.rank(), "narrow");
    offset[static_cast<std::size_t>(ax)] += a.start;
    id = g.node(id).inputs[0];
  }
  if (g.node(id).op != OpKind::Constant)
    return false;
  const ir::Tensor& c = g.node(id).attr<ir::ConstantAttrs>().value;
  if (c.shape().rank() != ms.rank())
    return false;
  const std::vector<std::int64_t> st = ir::contiguous_strides(c.shape().sizes());
  std::int64_t base = 0;
  for (std::size_t d = 0; d < st.size(); ++d)
    base += offset[d] * st[d];
  const std::int64_t rs = st[st.size() - 2], cs = st.back();
  for (std::int64_t i = 0; i < sq; ++i)
    for (std::int64_t j = 0; j < sk; ++j) {
      const double v = c.get_f64(base + i * rs + j * cs);
      const bool keep = j <= i + sk - sq;
      if (keep ? v != 0 : !(std::isinf(v) && v < 0))
        return false;
    }
  return true;
}

} // namespace

std::vector<Pattern> attention_patterns() {
  std::vector<Pattern> out;
  {
    Pattern p;
    p.name = "attention";
    Pat softmax = Pat::op(OpKind::Softmax);
    softmax.one_use();
    softmax.where(
        [](const Graph& g, NodeId id) {
          const std::int64_t r = static_cast<std::int64_t>(g.shape(id).rank());
          const std::int64_t ax = g.node(id).attr<ir::AxisAttrs>().axis;
          return ax == -1 || ax == r - 1;
        },
        MissReason::attribute_mismatch, "softmax is not over the last (key) axis");
    p.root = Pat::op(OpKind::MatMul, {std::move(softmax), Pat::any()});
    p.root.structurally([](const Graph& g, NodeId id) { return analyse(g, id).has_value(); });
    p.root.float_dtype();
    p.check = [](const Graph& g, const Match& m) { return check_spelling(g, *analyse(g, m.root)); };
    p.emits = {OpKind::Attention};
    p.rewrite = [](ir::Builder& b, const Match& m) {
      const Spelling s = *analyse(b.graph(), m.root);
      return emit_attention(b, s, m.root);
    };
    out.push_back(std::move(p));
  }
  {
    Pattern p;
    p.name = "attention_bshd";
    Pat attn = Pat::op(OpKind::Attention).bind("attn");
    attn.structurally([](const Graph& g, NodeId id) {
      return g.node(id).attr<ir::AttentionAttrs>().layout == ir::AttnLayout::bhsd &&
             untransposed(g, id, 0).valid() && untransposed(g, id, 1).valid() &&
             untransposed(g, id, 2).valid();
    });
    attn.one_use();
    p.root = Pat::op(OpKind::Transpose, {std::move(attn)});
    p.root.structurally([](const Graph& g, NodeId id) { return is_perm(g, id, {0, 2, 1, 3}); });
    p.emits = {OpKind::Attention};
    p.rewrite = [](ir::Builder& b, const Match& m) {
      const Graph& g = b.graph();
      const ir::Node n = g.node(m["attn"]);
      auto a = n.attr<ir::AttentionAttrs>();
      a.layout = ir::AttnLayout::bshd;
      std::vector<NodeId> in{untransposed(g, m["attn"], 0), untransposed(g, m["attn"], 1),
                             untransposed(g, m["attn"], 2)};
      if (n.inputs.size() == 4)
        in.push_back(n.inputs[3]);
      return b.op(OpKind::Attention, std::move(in), a, n.name);
    };
    out.push_back(std::move(p));
  }
  {
    Pattern p;
    p.name = "attention_causal_bias";
    p.root = Pat::op(OpKind::Attention);
    p.root.structurally([](const Graph& g, NodeId id) {
      const ir::Node& n = g.node(id);
      return n.attr<ir::AttentionAttrs>().mask == ir::MaskKind::bias && n.inputs.size() == 4 &&
             narrowed_constant(g, n.inputs[3]).valid();
    });
    p.check = [](const Graph& g, const Match& m) -> std::optional<Miss> {
      const auto [sq, sk] = query_key_lengths(g, m.root);
      if (is_causal_bias(g, g.node(m.root).inputs[3], sq, sk))
        return std::nullopt;
      return fail(MissReason::attribute_mismatch,
                  "the additive mask is not a constant holding exactly the causal pattern");
    };
    p.emits = {OpKind::Attention};
    p.rewrite = [](ir::Builder& b, const Match& m) {
      const ir::Node n = b.graph().node(m.root);
      auto a = n.attr<ir::AttentionAttrs>();
      a.mask = ir::MaskKind::causal;
      return b.op(OpKind::Attention, {n.inputs[0], n.inputs[1], n.inputs[2]}, a, n.name);
    };
    out.push_back(std::move(p));
  }
  return out;
}

} // namespace rlx::fusion
