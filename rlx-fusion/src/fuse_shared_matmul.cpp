// fuse_shared_matmul.cpp: fuse-shared-input-matmul. Projections of one input by several [N_i, K]
// weights (Q / K / V, gate / up), each MatMul(x, W_i, transpose_b) and optionally + b_i, become
// one MatMul against Concat(W_i) (+ Concat(b_i)) followed by Split (a tuple) and one Get per
// projection. Exporters (ONNX from PyTorch) store the weights as [K, N_i] and multiply without the
// flag, MatMul(x, W_i): those group among themselves and concatenate along axis 1. The Concat reads
// only weights (Params): a backend computes it when the weights are bound or written, never per run
// (the CPU backend keeps it as a derived copy of the weights in the weight region,
// rlx-cpu/src/weight_concat.cpp).
//
// The driver replaces one root per rewrite, so every member of a group rewrites on its own visit:
// the first builds the packed product, the others find it among x's users and add their Get.
#include "rlx/fusion/transformer_fusions.hpp"

#include <algorithm>

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// A 2-D Param: weights bound at run time (Constants are left to const-fold and the GEMM's own
/// packing).
bool is_weight(const Graph& g, NodeId id) {
  return g.node(id).op == OpKind::Param && g.shape(id).rank() == 2;
}

/// MatMul(x, W, transpose_b) with W a 2-D [N, K] weight, or MatMul(x, W) with W [K, N]: a
/// projection of x.
bool is_projection(const Graph& g, NodeId id, NodeId x) {
  const ir::Node& n = g.node(id);
  if (n.op != OpKind::MatMul || n.inputs[0] != x || n.inputs[1] == x)
    return false;
  const auto& a = n.attr<ir::MatMulAttrs>();
  return !a.transpose_a && is_weight(g, n.inputs[1]) &&
         g.shape(n.inputs[1]).dtype == g.shape(x).dtype;
}

/// Whether projection \p mm reads its weight transposed ([N, K]).
bool transposed(const Graph& g, NodeId mm) {
  return g.node(mm).attr<ir::MatMulAttrs>().transpose_b;
}

/// The bias Add of projection \p mm (its single user Add(mm, b) with b a [N] weight), or invalid.
NodeId bias_add(const Graph& g, NodeId mm) {
  if (g.use_count(mm) != 1 || g.users(mm).empty())
    return {};
  const NodeId u = g.users(mm)[0];
  const ir::Node& n = g.node(u);
  if (n.op != OpKind::Add)
    return {};
  const NodeId b = n.inputs[0] == mm ? n.inputs[1] : n.inputs[0];
  const ir::Shape& bs = g.shape(b);
  if (g.node(b).op != OpKind::Param || bs.rank() != 1 || !(bs[0] == g.shape(mm).dims.back()) ||
      !(g.shape(u) == g.shape(mm)))
    return {};
  return u;
}

/// The projections of x with weights of one layout (\p tb: [N, K]) in node order (dead ones
/// included, so every member of a group sees the same group while the driver rewrites them one by
/// one).
std::vector<NodeId> projections_of(const Graph& g, NodeId x, bool tb) {
  std::vector<NodeId> out;
  for (NodeId u : g.users(x))
    if (is_projection(g, u, x) && transposed(g, u) == tb &&
        std::find(out.begin(), out.end(), u) == out.end())
      out.push_back(u);
  std::sort(out.begin(), out.end(), [](NodeId a, NodeId b) { return a.v < b.v; });
  return out;
}

struct Group {
  NodeId x;
  std::vector<NodeId> mms;    ///< the projections
  std::vector<NodeId> biases; ///< their bias Adds (all valid, or empty)
  std::size_t index = 0;      ///< the root's member
};

/// The group of the root (a projection, or the bias Add of one when \p with_bias).
std::optional<Group> group_of(const Graph& g, NodeId root, bool with_bias) {
  NodeId mm = root;
  if (with_bias) {
    const ir::Node& a = g.node(root);
    if (a.op != OpKind::Add)
      return std::nullopt;
    mm = g.node(a.inputs[0]).op == OpKind::MatMul ? a.inputs[0] : a.inputs[1];
    if (g.node(mm).op != OpKind::MatMul || bias_add(g, mm) != root)
      return std::nullopt;
  }
  if (g.node(mm).op != OpKind::MatMul)
    return std::nullopt;
  Group grp;
  grp.x = g.node(mm).inputs[0];
  if (!is_projection(g, mm, grp.x))
    return std::nullopt;
  grp.mms = projections_of(g, grp.x, transposed(g, mm));
  if (grp.mms.size() < 2)
    return std::nullopt;
  bool all_biased = true;
  for (NodeId m : grp.mms)
    all_biased = all_biased && bias_add(g, m).valid();
  // The biased form takes groups whose members all have a bias; the plain form the others.
  if (all_biased != with_bias)
    return std::nullopt;
  for (std::size_t i = 0; i < grp.mms.size(); ++i) {
    if (grp.mms[i] == mm)
      grp.index = i;
    if (with_bias)
      grp.biases.push_back(bias_add(g, grp.mms[i]));
  }
  return grp;
}

/// A Concat along \p axis of exactly \p parts among the users of \p parts[0], or invalid.
NodeId find_concat(const Graph& g, const std::vector<NodeId>& parts, std::int64_t axis) {
  for (NodeId u : g.users(parts[0])) {
    const ir::Node& n = g.node(u);
    if (n.op == OpKind::Concat && n.attr<ir::AxisAttrs>().axis == axis && n.inputs == parts)
      return u;
  }
  return {};
}

/// The Split of the packed product of \p grp if an earlier member built it, or invalid.
NodeId find_split(const Graph& g, const Group& grp, const std::vector<NodeId>& weights,
                  const std::vector<NodeId>& bias_values) {
  const NodeId wc = find_concat(g, weights, transposed(g, grp.mms[0]) ? 0 : 1);
  if (!wc.valid())
    return {};
  for (NodeId mm : g.users(wc)) {
    const ir::Node& n = g.node(mm);
    if (n.op != OpKind::MatMul || n.inputs[0] != grp.x || n.inputs[1] != wc)
      continue;
    NodeId packed = mm;
    if (!bias_values.empty()) {
      const NodeId bc = find_concat(g, bias_values, 0);
      packed = {};
      for (NodeId a : g.users(mm))
        if (g.node(a).op == OpKind::Add && g.node(a).inputs[1] == bc)
          packed = a;
      if (!packed.valid())
        continue;
    }
    for (NodeId s : g.users(packed))
      if (g.node(s).op == OpKind::Split)
        return s;
  }
  return {};
}

std::optional<Miss> check_group(const Graph& g, const Group& grp) {
  const ir::Shape& x = g.shape(grp.x);
  if (!x.dims.back().is_static())
    return Miss{MissReason::shape_mismatch, "the contraction dim of " + x.str() + " is symbolic"};
  for (NodeId m : grp.mms)
    if (!g.shape(g.node(m).inputs[1]).is_static())
      return Miss{MissReason::shape_mismatch, "a weight has a symbolic shape"};
  return std::nullopt;
}

NodeId rewrite_group(ir::Builder& b, const Match& m, bool with_bias) {
  const Group grp = *group_of(b.graph(), m.root, with_bias);
  const Graph& g = b.graph();
  std::vector<NodeId> weights, bias_values;
  std::vector<std::int64_t> sizes;
  const bool tb = transposed(g, grp.mms[0]);
  for (std::size_t i = 0; i < grp.mms.size(); ++i) {
    weights.push_back(g.node(grp.mms[i]).inputs[1]);
    sizes.push_back(g.shape(weights.back())[tb ? 0 : 1].size());
    if (with_bias) {
      const ir::Node& a = g.node(grp.biases[i]);
      bias_values.push_back(a.inputs[0] == grp.mms[i] ? a.inputs[1] : a.inputs[0]);
    }
  }
  NodeId split = find_split(g, grp, weights, bias_values);
  if (!split.valid()) {
    NodeId packed = b.matmul(grp.x, b.concat(weights, tb ? 0 : 1), false, tb);
    if (with_bias)
      packed = b.add(packed, b.concat(bias_values, 0));
    const auto rank = static_cast<std::int64_t>(b.shape(packed).rank());
    split = b.split(packed, rank - 1, sizes);
  }
  return b.get(split, static_cast<std::int64_t>(grp.index));
}

Pattern shared_pattern(bool with_bias) {
  Pattern p;
  p.name = with_bias ? "shared_input_matmul_bias" : "shared_input_matmul";
  p.gated = false; // a member adds a Split that the group's other members pay back
  p.root = Pat::op(with_bias ? OpKind::Add : OpKind::MatMul);
  p.root.structurally(
      [with_bias](const Graph& g, NodeId id) { return group_of(g, id, with_bias).has_value(); });
  p.check = [with_bias](const Graph& g, const Match& m) {
    return check_group(g, *group_of(g, m.root, with_bias));
  };
  p.emits = {OpKind::MatMul, OpKind::Concat, OpKind::Split, OpKind::Get};
  if (with_bias)
    p.emits.push_back(OpKind::Add);
  p.rewrite = [with_bias](ir::Builder& b, const Match& m) {
    return rewrite_group(b, m, with_bias);
  };
  return p;
}

} // namespace

std::vector<Pattern> shared_input_matmul_patterns() {
  return {shared_pattern(true), shared_pattern(false)};
}

} // namespace rlx::fusion
