// graph_util.cpp: change detection and node removal.
#include "graph_util.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::compile::detail {

bool compact_changed(ir::Graph& g) {
  const std::size_t before = g.size();
  std::vector<ir::NodeId> remap = g.compact();
  if (g.size() != before)
    return true;
  for (std::size_t i = 0; i < remap.size(); ++i)
    if (remap[i].v != i)
      return true;
  return false;
}

void erase_unused(ir::Graph& g, const std::vector<char>& drop) {
  ir::Graph out(g.name());
  std::vector<ir::NodeId> map(g.size());
  for (ir::NodeId id : g.ids()) {
    if (id.v < drop.size() && drop[id.v]) {
      if (g.use_count(id) != 0)
        throw Error("erase_unused: " + ir::describe(g, id) + " still has uses");
      continue;
    }
    ir::Node n = g.node(id);
    for (ir::NodeId& in : n.inputs)
      in = map[in.v];
    map[id.v] = out.add_unchecked(std::move(n));
  }
  std::vector<ir::NodeId> outs;
  for (ir::NodeId o : g.outputs())
    outs.push_back(map[o.v]);
  out.set_outputs(std::move(outs));
  g = std::move(out);
}

} // namespace rlx::compile::detail
