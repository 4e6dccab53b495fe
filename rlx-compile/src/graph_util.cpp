// graph_util.cpp: sub-graph inlining, splat tests, constant fills and node removal.
#include "graph_util.hpp"

#include "rlx/ir/error.hpp"

#include <type_traits>
#include <variant>

namespace rlx::compile::detail {

std::vector<ir::NodeId> inline_subgraph(ir::Builder& b, const ir::Graph& sub,
                                        std::span<const ir::NodeId> args, std::string_view what) {
  std::vector<ir::NodeId> map(sub.size());
  std::size_t next_arg = 0;
  for (ir::NodeId id : sub.ids()) {
    const ir::Node& n = sub.node(id);
    switch (n.op) {
    case ir::OpKind::Input:
      if (next_arg >= args.size())
        throw Error(std::string(what) + ": sub-graph '" + sub.name() + "' takes more inputs than " +
                    std::to_string(args.size()) + " operands");
      map[id.v] = args[next_arg++];
      break;
    case ir::OpKind::Param:
      throw Error(std::string(what) + ": sub-graph '" + sub.name() + "' holds param '" +
                  n.attr<ir::LeafAttrs>().name + "'; sub-graphs take every value as an input");
    default: {
      std::vector<ir::NodeId> ins;
      ins.reserve(n.inputs.size());
      for (ir::NodeId in : n.inputs)
        ins.push_back(map[in.v]);
      map[id.v] = b.op(n.op, std::move(ins), n.attrs, n.name);
    }
    }
  }
  if (next_arg != args.size())
    throw Error(std::string(what) + ": sub-graph '" + sub.name() + "' takes " +
                std::to_string(next_arg) + " inputs, got " + std::to_string(args.size()));
  std::vector<ir::NodeId> outs;
  for (ir::NodeId o : sub.outputs())
    outs.push_back(map[o.v]);
  return outs;
}

std::string first_fallible(const ir::Graph& g) {
  for (ir::NodeId id : g.ids()) {
    const ir::Node& n = g.node(id);
    const bool int_operands = !n.inputs.empty() && ir::is_int(g.shape(n.inputs[0]).dtype);
    if (ir::has_flag(n.op, ir::kMayFail) || (ir::has_flag(n.op, ir::kMayFailInt) && int_operands))
      return ir::describe(g, id) + (int_operands ? " (integer)" : "") + " in sub-graph '" +
             g.name() + "'";
    if (!ir::has_flag(n.op, ir::kSubgraphs))
      continue;
    std::string inner;
    std::visit(
        [&](const auto& a) {
          using A = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<A, ir::IfAttrs>) {
            inner = first_fallible(*a.then_branch);
            if (inner.empty())
              inner = first_fallible(*a.else_branch);
          } else if constexpr (std::is_same_v<A, ir::WhileAttrs>) {
            inner = first_fallible(*a.cond);
            if (inner.empty())
              inner = first_fallible(*a.body);
          } else if constexpr (std::is_same_v<A, ir::CustomFnAttrs>) {
            inner = first_fallible(*a.body);
          }
        },
        n.attrs);
    if (!inner.empty())
      return inner;
  }
  return {};
}

ir::NodeId full_constant(ir::Builder& b, const ir::Shape& type, double v) {
  ir::Tensor t(type);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, v);
  return b.constant(std::move(t));
}

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
