// simplify_ad.cpp: the exact local simplification run between the orders of nth_order_grad.
//
// rlx-compile's const-fold / simplify / cse passes cannot be called here (rlx-compile depends on
// rlx-autodiff), so the few rewrites that keep repeated reverse mode from piling up are local:
// the seeds of every order are constant ones, so their products vanish, and the orders recompute
// the same forward values, which CSE merges.
#include "helpers.hpp"
#include "rlx/fusion/node_key.hpp"
#include "rlx/ir/effects.hpp"

#include <unordered_map>

namespace rlx::autodiff::detail {

namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;

/// Whether \p id is a constant (or an Expand of one) whose every element equals \p v.
bool is_splat(const Graph& g, NodeId id, double v) {
  const Node* n = &g.node(id);
  while (n->op == OpKind::Expand || n->op == OpKind::Reshape)
    n = &g.node(n->inputs[0]);
  if (n->op != OpKind::Constant || !is_float(n->shape.dtype))
    return false;
  const ir::Tensor& t = n->attr<ir::ConstantAttrs>().value;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (t.get_f64(i) != v)
      return false;
  return true;
}

/// The value node \p id equals, when an exact identity makes it one of its operands.
NodeId identity_of(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  auto same_type = [&](NodeId x) { return g.shape(x) == n.shape; };
  switch (n.op) {
  case OpKind::Mul:
    for (int s = 0; s < 2; ++s)
      if (is_splat(g, n.inputs[1 - s], 1.0) && same_type(n.inputs[s]))
        return n.inputs[s];
    break;
  case OpKind::Add:
    for (int s = 0; s < 2; ++s)
      if (is_splat(g, n.inputs[1 - s], 0.0) && same_type(n.inputs[s]))
        return n.inputs[s];
    break;
  case OpKind::Sub:
    if (is_splat(g, n.inputs[1], 0.0) && same_type(n.inputs[0]))
      return n.inputs[0];
    break;
  case OpKind::Neg:
    if (g.node(n.inputs[0]).op == OpKind::Neg)
      return g.node(n.inputs[0]).inputs[0];
    break;
  case OpKind::Expand:
  case OpKind::Reshape:
    if (same_type(n.inputs[0]))
      return n.inputs[0];
    break;
  default:
    break;
  }
  return {};
}

} // namespace

void simplify_ad(Graph& g) {
  std::unordered_multimap<std::uint64_t, NodeId> seen;
  for (NodeId id : g.ids()) {
    const Node& n = g.node(id);
    if (n.op == OpKind::Input || n.op == OpKind::Param || ir::has_effects(n))
      continue;
    if (NodeId x = identity_of(g, id); x.valid()) {
      g.replace_all_uses(id, x);
      continue;
    }
    const std::uint64_t h = fusion::node_hash(n);
    NodeId match;
    auto [lo, hi] = seen.equal_range(h);
    for (auto it = lo; it != hi && !match.valid(); ++it)
      if (fusion::node_equal(n, g.node(it->second)))
        match = it->second;
    if (match.valid())
      g.replace_all_uses(id, match);
    else
      seen.emplace(h, id);
  }
  g.compact();
}

} // namespace rlx::autodiff::detail
