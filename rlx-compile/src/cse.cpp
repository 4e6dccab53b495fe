// cse.cpp: the cse pass, common-subexpression elimination by structural identity.
//
// One walk in topological order. Each node's key is (op, attributes, operands, type) through
// rlx::fusion::node_hash / node_equal, with the operands of commutative binary ops sorted so that
// a + b and b + a meet. A node equal to an earlier one has its uses moved to it; since operands
// come first in the list, users are canonicalised before they are looked up, so whole duplicate
// subtrees collapse in one walk. Not merged:
//  - Inputs and Params: they are the interface, bound by name (two leaves are never the same value
//    merely because their types agree);
//  - nodes with effects (ir::has_effects: a Custom op whose CustomOpDef declares effects, an If /
//    While / CustomFn whose body holds one): two runs of such an op are two events, not one value.
// Constants with equal type and bytes are merged (debug labels are not part of the key).
#include "rlx/compile/passes.hpp"

#include "graph_util.hpp"
#include "rlx/fusion/node_key.hpp"
#include "rlx/ir/effects.hpp"

#include <unordered_map>

namespace rlx::compile {

bool CsePass::run(ir::Graph& g, fusion::PassContext&) {
  std::unordered_multimap<std::uint64_t, ir::NodeId> seen;
  seen.reserve(g.size());
  bool changed = false;
  for (ir::NodeId id : g.ids()) {
    const ir::Node& n = g.node(id);
    if (n.op == ir::OpKind::Input || n.op == ir::OpKind::Param || ir::has_effects(n))
      continue;
    ir::Node key_storage;
    const ir::Node* key = &n;
    if (n.inputs.size() == 2 && ir::is_commutative(n.op) && n.inputs[1] < n.inputs[0]) {
      key_storage = n;
      std::swap(key_storage.inputs[0], key_storage.inputs[1]);
      key = &key_storage;
    }
    const std::uint64_t h = fusion::node_hash(*key);
    ir::NodeId match;
    auto [lo, hi] = seen.equal_range(h);
    for (auto it = lo; it != hi && !match.valid(); ++it) {
      const ir::Node& other = g.node(it->second);
      if (fusion::node_equal(*key, other))
        match = it->second;
      else if (other.inputs.size() == 2 && ir::is_commutative(other.op)) {
        ir::Node swapped = other;
        std::swap(swapped.inputs[0], swapped.inputs[1]);
        if (fusion::node_equal(*key, swapped))
          match = it->second;
      }
    }
    if (match.valid()) {
      g.replace_all_uses(id, match);
      changed = true;
    } else {
      seen.emplace(h, id);
    }
  }
  if (changed)
    g.compact();
  return changed;
}

} // namespace rlx::compile
