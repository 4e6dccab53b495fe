// ops_control.cpp: ONNX If -> rlx If (one If per ONNX output; the branches capture outer values
// as Inputs). Loop and Scan are not converted (see DESIGN.md).
#include "importer.hpp"

#include <array>

namespace rlx::onnx::detail {

namespace {

using ir::NodeId;

void if_op(NodeCtx& c) {
  NodeId pred = c.in(0);
  if (c.g().shape(pred).dtype != ir::DType::boolean)
    throw Invalid("the condition must be bool");
  pred = reshape_to(c, pred, {});
  const pb::GraphProto* tg = c.attr_g("then_branch");
  const pb::GraphProto* eg = c.attr_g("else_branch");
  if (!tg || !eg)
    throw Invalid("then_branch / else_branch missing");
  if (tg->output_size() != static_cast<int>(c.num_outputs()) ||
      eg->output_size() != static_cast<int>(c.num_outputs()))
    throw Invalid("the branches' outputs do not match the node's");
  auto [tgraph, tcaps] = c.subgraph(*tg);
  auto [egraph, ecaps] = c.subgraph(*eg);
  // Both branches bind the same captures, in one order: then's, followed by else's others.
  std::vector<NodeId> caps = tcaps;
  for (NodeId e : ecaps) {
    auto it = std::find(caps.begin(), caps.end(), e);
    if (it == caps.end())
      caps.push_back(e);
  }
  auto align = [&](const ir::Graph& br, const std::vector<NodeId>& own) {
    // Rebuild \p br with Inputs for every capture in `caps` order.
    ir::Graph out(br.name());
    ir::Builder b(out);
    std::vector<NodeId> map(br.size());
    std::vector<NodeId> ins = br.inputs();
    for (NodeId cap : caps) {
      auto it = std::find(own.begin(), own.end(), cap);
      std::string name = "capture." + std::to_string(cap.v);
      ir::Shape t = c.g().shape(cap);
      NodeId id = b.input(name, t);
      if (it != own.end())
        map[ins[static_cast<std::size_t>(it - own.begin())].v] = id;
    }
    for (NodeId id : br.ids()) {
      const ir::Node& n = br.node(id);
      if (n.op == ir::OpKind::Input)
        continue;
      std::vector<NodeId> args;
      for (NodeId a : n.inputs)
        args.push_back(map[a.v]);
      map[id.v] = out.add(n.op, args, n.attrs, n.name);
    }
    std::vector<NodeId> outs;
    for (NodeId o : br.outputs())
      outs.push_back(map[o.v]);
    out.set_outputs(outs);
    return out;
  };
  ir::Graph t2 = align(tgraph, tcaps), e2 = align(egraph, ecaps);
  for (std::size_t k = 0; k < c.num_outputs(); ++k) {
    if (!c.output_used(k))
      continue;
    ir::Graph tk = t2, ek = e2;
    tk.set_outputs({t2.outputs()[k]});
    ek.set_outputs({e2.outputs()[k]});
    tk.compact();
    ek.compact();
    c.set(k, c.b().if_(pred, caps, std::move(tk), std::move(ek)));
  }
}

constexpr auto kOps = std::to_array<ConverterEntry>({
    {"If", if_op},
});

} // namespace

std::span<const ConverterEntry> control_converters() {
  return kOps;
}

} // namespace rlx::onnx::detail
