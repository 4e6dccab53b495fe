// vjp_control.cpp: VJP rules of If, CustomFn and FakeQuantize.
#include "helpers.hpp"
#include "table.hpp"

#include <memory>

namespace rlx::autodiff::detail {
namespace {

using ir::OpKind;
using Grads = std::vector<NodeId>;

Grads if_op(VjpContext& c) {
  // One If per capture that needs a gradient: it runs the VJP of the branch the forward took (so
  // the other branch's backward never runs, like its forward), on the captures and `up`.
  auto& b = c.b;
  const auto& a = c.node.attr<ir::IfAttrs>();
  std::vector<NodeId> args(c.in.begin() + 1, c.in.end());
  args.push_back(c.up);
  Grads g(c.in.size());
  for (std::size_t i = 1; i < c.in.size(); ++i) {
    if (!c.needs[i])
      continue;
    g[i] = b.if_(c.in[0], args, vjp_body(*a.then_branch, i - 1), vjp_body(*a.else_branch, i - 1));
  }
  return g;
}

Grads custom_fn(VjpContext& c) {
  const auto& a = c.node.attr<ir::CustomFnAttrs>();
  if (a.vjp) {
    // the user's VJP body: (inputs..., d_output) -> one gradient per input
    std::vector<NodeId> args = c.in;
    args.push_back(c.up);
    Grads g = inline_graph(c.b, *a.vjp, args);
    for (std::size_t i = 0; i < g.size(); ++i)
      if (!c.needs[i])
        g[i] = NodeId{};
    return g;
  }
  ir::SubGraph body = a.body;
  return c.decompose(
      [body](Builder& b, std::span<const NodeId> in) { return inline_graph(b, *body, in).at(0); });
}

Grads fake_quantize(VjpContext& c) {
  return {c.up}; // straight-through (ops.def)
}

} // namespace

void add_control_rules(VjpTable& t) {
  set_rule(t, OpKind::If, if_op, 1u << 0);
  // A CustomFn without a VJP body is differentiated through its inlined body.
  set_rule(t, OpKind::CustomFn, custom_fn);
  set_rule(t, OpKind::FakeQuantize, fake_quantize);
}

} // namespace rlx::autodiff::detail
