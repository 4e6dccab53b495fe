// attention.cpp: decompositions of Attention and Rope (matmuls, softmax, constant tables).
//
// Exact in IEEE arithmetic unless noted; the notes say where a form rounds differently (never more
// than a few ulps) or differs on special values. Tested in rlx-ir/tests/decompositions_test.cpp.
#include "families.hpp"

#include "rlx/ir/error.hpp"

#include <cmath>
#include <limits>

namespace rlx::ir::decompose_detail {

namespace {

/// \p x [.., S, .., D] in \p layout as [B, H, S, D].
NodeId to_bhsd(Builder& b, NodeId x, AttnLayout layout) {
  return layout == AttnLayout::bshd ? b.transpose(x, {0, 2, 1, 3}) : x;
}

} // namespace

// The forward probabilities of attention in [B, H, S, D] form: scores = scale * q k^T (k's heads
// repeated for GQA), softcap, + bias, masked keys set to -inf, p = softmax(scores), with rows whose
// scores are all -inf (no kept key) 0 as in the reference. Causal and sliding-window masks are
// constants of [Sq, Sk], so those two kinds need static sequence lengths. \p q, \p k, \p v, \p mask
// are the forward's operands (mask invalid when the kind takes none).
AttentionProbs attention_probs(Builder& b, const AttentionAttrs& a, NodeId q_in, NodeId k_in,
                               NodeId v_in, NodeId mask, std::string& why) {
  AttentionProbs r;
  const DType t = b.shape(q_in).dtype;
  NodeId q = to_bhsd(b, q_in, a.layout);
  NodeId k = to_bhsd(b, k_in, a.layout);
  NodeId v = to_bhsd(b, v_in, a.layout);
  const Shape qs = b.shape(q), ks = b.shape(k);
  const bool positional = a.mask == MaskKind::causal || a.mask == MaskKind::sliding_window;
  if (positional && !(qs[2].is_static() && ks[2].is_static())) {
    why = "a causal / sliding-window mask needs static sequence lengths; bind them first";
    return r;
  }
  if (!qs[3].is_static()) {
    why = "head_dim is symbolic";
    return r;
  }
  r.group = a.num_heads / a.num_kv_heads;
  if (r.group > 1) { // kv head h / group serves query head h
    auto repeat = [&](NodeId x) {
      const Shape s = b.shape(x);
      NodeId rep = b.reshape(x, {s[0], s[1], Dim(1), s[2], s[3]});
      rep = b.expand(rep, {s[0], s[1], Dim(r.group), s[2], s[3]});
      return b.reshape(rep, {s[0], Dim(a.num_heads), s[2], s[3]});
    };
    k = repeat(k);
    v = repeat(v);
  }
  r.scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(qs[3].size())));
  NodeId s = b.mul(b.matmul(q, k, false, true), b.scalar(r.scale, t));
  if (a.softcap) {
    r.tanh = b.tanh(b.mul(s, b.scalar(1.0 / *a.softcap, t)));
    s = b.mul(r.tanh, b.scalar(*a.softcap, t));
  }
  if (a.mask == MaskKind::bias)
    s = b.add(s, mask);
  NodeId keep;
  if (positional) {
    const std::int64_t sq = qs[2].size(), sk = ks[2].size(), shift = sk - sq;
    Tensor m(Shape::of({sq, sk}, DType::boolean));
    for (std::int64_t i = 0; i < sq; ++i)
      for (std::int64_t j = 0; j < sk; ++j) {
        bool vis = j <= i + shift;
        if (a.mask == MaskKind::sliding_window)
          vis = vis && j > i + shift - a.window;
        m.set_f64(i * sk + j, vis);
      }
    keep = b.constant(m);
  } else if (a.mask == MaskKind::padding) {
    const Shape ms = b.shape(mask);
    NodeId nz = b.compare(CmpOp::ne, mask, b.scalar(0, ms.dtype));
    keep = b.reshape(nz, {ms[0], Dim(1), Dim(1), ms[1]});
  }
  // Masked keys score -inf, so softmax gives them exactly 0 in every row that keeps a finite
  // score. A row whose scores are all -inf (no kept key, a bias of -inf, or -inf scores) would
  // give NaN (-inf - -inf); the reference gives 0, so such rows are selected away by their max.
  const double inf = std::numeric_limits<double>::infinity();
  if (keep.valid())
    s = b.where(keep, s, b.scalar(-inf, t));
  NodeId p = b.softmax(s, -1);
  if (!(ks[2].is_static() && ks[2].size() == 0)) { // no keys at all: p is empty, out is 0
    NodeId dead = b.compare(CmpOp::eq, b.reduce(ReduceOp::max, s, {-1}, true), b.scalar(-inf, t));
    p = b.where(dead, b.scalar(0, t), p);
  }
  r.q = q;
  r.k = k;
  r.v = v;
  r.p = p;
  return r;
}

namespace {

// attention(q, k, v[, mask]) = p v in [B, H, S, D] form, p as attention_probs computes it.
NodeId attention_by_matmul(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  const auto& a = n.attr<AttentionAttrs>();
  const NodeId mask = n.inputs.size() > 3 ? n.inputs[3] : NodeId{};
  const AttentionProbs r = attention_probs(b, a, n.inputs[0], n.inputs[1], n.inputs[2], mask, why);
  if (!r.p.valid())
    return {};
  NodeId out = b.matmul(r.p, r.v);
  return a.layout == AttnLayout::bshd ? b.transpose(out, {0, 2, 1, 3}) : out;
}

// rope(x): per position p = s + offset and pair k < n_rot / 2 at angle p * theta^(-2k / n_rot),
// (a, b) -> (a cos - b sin, a sin + b cos), with cos / sin tables as constants (so the sequence
// length must be static); features past n_rot pass through. rope_grad(dy) is the same form with
// the angle negated (sin tables of the opposite sign): the inverse rotation, rope's transpose.
NodeId rope_by_tables(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  const auto& a = n.attr<RopeAttrs>();
  const DType t = n.shape.dtype;
  NodeId x = n.inputs[0];
  const Shape xs = b.shape(x);
  const std::size_t seq_axis = a.layout == AttnLayout::bshd ? 1 : 2;
  if (!xs[seq_axis].is_static()) {
    why = "the sequence length is symbolic (the cos / sin tables are constants); bind it first";
    return {};
  }
  const std::int64_t seq = xs[seq_axis].size(), d = xs[3].size();
  const std::int64_t rot = a.n_rot == 0 ? d : a.n_rot, half = rot / 2;
  // Tables [S, 1, half] (bshd) or [S, half] (bhsd), broadcasting against [.., S, .., half].
  std::vector<std::int64_t> dims = a.layout == AttnLayout::bshd
                                       ? std::vector<std::int64_t>{seq, 1, half}
                                       : std::vector<std::int64_t>{seq, half};
  Tensor cos_t(Shape::of(dims, t)), sin_t(Shape::of(dims, t));
  const double sign = n.op == OpKind::RopeGrad ? -1.0 : 1.0; // rope_grad turns back
  for (std::int64_t s = 0; s < seq; ++s)
    for (std::int64_t k = 0; k < half; ++k) {
      const double angle =
          static_cast<double>(s + a.position_offset) *
          std::pow(a.theta, -2.0 * static_cast<double>(k) / static_cast<double>(rot));
      cos_t.set_f64(s * half + k, std::cos(angle));
      sin_t.set_f64(s * half + k, sign * std::sin(angle));
    }
  NodeId cs = b.constant(cos_t), sn = b.constant(sin_t);
  NodeId rotated;
  if (a.style == RopeStyle::half) {
    NodeId x1 = b.narrow(x, 3, 0, half), x2 = b.narrow(x, 3, half, half);
    NodeId y1 = b.sub(b.mul(x1, cs), b.mul(x2, sn));
    NodeId y2 = b.add(b.mul(x1, sn), b.mul(x2, cs));
    rotated = b.concat({y1, y2}, 3);
  } else {
    // Pairs (2k, 2k + 1): view the rotated features as [.., half, 2].
    NodeId xr = rot == d ? x : b.narrow(x, 3, 0, rot);
    NodeId pairs = b.reshape(xr, {xs[0], xs[1], xs[2], Dim(half), Dim(2)});
    std::vector<Dim> tdims(dims.begin(), dims.end());
    tdims.emplace_back(1);
    NodeId c5 = b.reshape(cs, tdims), s5 = b.reshape(sn, tdims);
    NodeId pa = b.narrow(pairs, 4, 0, 1), pb = b.narrow(pairs, 4, 1, 1);
    NodeId ya = b.sub(b.mul(pa, c5), b.mul(pb, s5));
    NodeId yb = b.add(b.mul(pa, s5), b.mul(pb, c5));
    rotated = b.reshape(b.concat({ya, yb}, 4), {xs[0], xs[1], xs[2], Dim(rot)});
  }
  if (rot == d)
    return rotated;
  return b.concat({rotated, b.narrow(x, 3, rot, d - rot)}, 3);
}

} // namespace

void add_attention_decompositions(DecompositionTable& t) {
  t.set(OpKind::Attention, {{"attention_by_matmul", attention_by_matmul}});
  t.set(OpKind::Rope, {{"rope_by_tables", rope_by_tables}});
  t.set(OpKind::RopeGrad, {{"rope_grad_by_tables", rope_by_tables}}); // backward ops 2
}

} // namespace rlx::ir::decompose_detail
