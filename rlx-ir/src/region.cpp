// region.cpp: the body rule of ElementwiseRegion and its inlined (unfused) form.
#include "rlx/ir/region.hpp"

#include "rlx/ir/effects.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::ir {

bool is_region_body_op(const Graph& g, NodeId id, std::string* why) {
  const Node& n = g.node(id);
  auto no = [&](std::string reason) {
    if (why)
      *why = std::move(reason);
    return false;
  };
  if (is_leaf(n.op))
    return no("a leaf is an operand of a region, not one of its ops");
  if (!is_elementwise(n.op))
    return no(std::string(fusion_kind_name(fusion_kind(n.op))) + " op");
  const bool plain_attrs = std::holds_alternative<NoAttrs>(n.attrs) || n.op == OpKind::Compare ||
                           n.op == OpKind::Cast || n.op == OpKind::Expand;
  if (!plain_attrs)
    return no("its attributes (quantisation scales) need element coordinates");
  if (has_effects(n))
    return no("it has effects");
  if (has_flag(n.op, kMayFail))
    return no("it may fail at run time");
  if (has_flag(n.op, kMayFailInt))
    for (NodeId in : n.inputs)
      if (!is_float(g.shape(in).dtype))
        return no("it may fail at run time on integer operands");
  if (n.shape.is_tuple())
    return no("its result is a tuple");
  return true;
}

std::vector<NodeId> inline_region(Builder& b, const Node& node, std::span<const NodeId> operands) {
  const auto* a = std::get_if<RegionAttrs>(&node.attrs);
  if (a == nullptr || !a->body)
    throw Error("inline_region: " + std::string(op_name(node.op)) +
                " is not an elementwise_region with a body");
  const Graph& body = *a->body;
  std::vector<NodeId> map(body.size());
  std::size_t next = 0;
  for (NodeId id : body.ids()) {
    const Node& n = body.node(id);
    if (n.op == OpKind::Input) {
      if (next >= operands.size())
        throw Error("inline_region: the body takes more inputs than the " +
                    std::to_string(operands.size()) + " operands");
      map[id.v] = operands[next++];
      continue;
    }
    if (n.op == OpKind::Param)
      throw Error("inline_region: the body holds param '" + n.attr<LeafAttrs>().name + "'");
    std::vector<NodeId> ins;
    ins.reserve(n.inputs.size());
    for (NodeId in : n.inputs)
      ins.push_back(map[in.v]);
    map[id.v] = b.op(n.op, std::move(ins), n.attrs, n.name);
  }
  if (next != operands.size())
    throw Error("inline_region: the body takes " + std::to_string(next) + " inputs, got " +
                std::to_string(operands.size()) + " operands");
  std::vector<NodeId> outs;
  outs.reserve(body.outputs().size());
  for (NodeId o : body.outputs())
    outs.push_back(map[o.v]);
  return outs;
}

} // namespace rlx::ir
