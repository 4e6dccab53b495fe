// const_fold_tuple.cpp: constant folding of tuple-typed nodes, one Get at a time.
#include "const_fold_tuple.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"

#include <algorithm>

namespace rlx::compile::detail {

bool fold_tuple(ir::Graph& g, ir::NodeId id, std::span<const ir::Tensor> args,
                std::int64_t operand_elements, std::int64_t max_elements) {
  std::vector<ir::Tensor> parts;
  try {
    parts = ir::reference::evaluate_node_parts(g.node(id), args);
  } catch (const ir::EvalError&) {
    return false; // left for the backend to report when the graph runs
  }
  std::vector<ir::NodeId> gets(g.users(id).begin(), g.users(id).end());
  std::sort(gets.begin(), gets.end());
  gets.erase(std::unique(gets.begin(), gets.end()), gets.end());
  bool changed = false;
  for (ir::NodeId u : gets) {
    if (g.node(u).op != ir::OpKind::Get)
      continue; // only Get reads a tuple (the verifier's rule)
    auto index = static_cast<std::size_t>(g.node(u).attr<ir::GetAttrs>().index);
    if (index >= parts.size())
      continue;
    const ir::Tensor& part = parts[index];
    if (part.numel() > max_elements && part.numel() > operand_elements)
      continue;
    if (!(part.shape() == g.shape(u)))
      throw Error("const-fold: the reference interpreter gave " + part.shape().str() +
                  " for part " + std::to_string(index) + " of " + ir::describe(g, id) +
                  ", whose get has type " + g.shape(u).str());
    std::string label = g.node(u).name;
    ir::NodeId c = ir::Builder(g).constant(part, std::move(label));
    g.replace_all_uses(u, c);
    changed = true;
  }
  return changed;
}

} // namespace rlx::compile::detail
