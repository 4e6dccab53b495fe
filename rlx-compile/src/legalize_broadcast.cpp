// legalize_broadcast.cpp: the legalize-broadcast pass, implicit broadcasts made explicit.
//
// The binary ops (Add ... Minimum), Compare and Where broadcast their operands with NumPy rules.
// A backend whose kernels do not (see Backend::broadcast_policy) gets, per PassOptions::broadcast:
//   implicit - nothing changes (the default; rlx-cpu broadcasts in its kernels);
//   simple   - operands that are scalars (one element) or whose dims, after dropping leading 1s,
//              are a suffix of the result's dims ([N, C] + [C], the modulo-indexing case) stay;
//              every other broadcast operand ([N, C, H, W] + [1, C, 1, 1]) is Expanded to the
//              result's dims;
//   none     - every operand whose dims differ from the result's is Expanded.
// An Expand the backend does not claim for the operand's dtype would only trade one unsupported
// form for another: that is an error naming the node and the backend.
#include "rlx/compile/passes.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::compile {

namespace {

bool keeps(fusion::BroadcastPolicy policy, const ir::Shape& operand, const ir::Shape& result) {
  if (operand.dims == result.dims)
    return true;
  if (policy == fusion::BroadcastPolicy::none)
    return false;
  if (operand.is_static() && operand.numel() == 1)
    return true;
  std::size_t lead = 0;
  while (lead < operand.rank() && operand[lead] == ir::Dim(1))
    ++lead;
  const std::size_t rest = operand.rank() - lead;
  if (rest > result.rank())
    return false;
  for (std::size_t i = 0; i < rest; ++i)
    if (!(operand[lead + i] == result[result.rank() - rest + i]))
      return false;
  return true;
}

} // namespace

bool LegalizeBroadcastPass::run(ir::Graph& g, fusion::PassContext& ctx) {
  const fusion::BroadcastPolicy policy = ctx.options.broadcast;
  if (policy == fusion::BroadcastPolicy::implicit)
    return false;
  bool changed = false;
  const std::size_t n = g.size();
  for (std::uint32_t i = 0; i < n; ++i) {
    const ir::NodeId id(i);
    const ir::OpKind op = g.node(id).op;
    if (ir::fusion_kind(op) != ir::FusionKind::broadcast || ir::op_info(op).min_arity < 2 ||
        g.use_count(id) == 0)
      continue; // Expand is a broadcast op too, but it is the explicit form itself
    const ir::Node node = g.node(id);
    std::vector<ir::NodeId> ins = node.inputs;
    bool any = false;
    ir::Builder b(g);
    for (ir::NodeId& in : ins) {
      const ir::Shape s = g.shape(in);
      if (keeps(policy, s, node.shape))
        continue;
      if (ctx.claims && !ctx.claims->claims(ir::OpKind::Expand, s.dtype))
        throw Error("legalize-broadcast: backend '" + ctx.backend +
                    "' needs explicit broadcasts but does not claim expand for " +
                    std::string(ir::dtype_name(s.dtype)) + " (operand of " + ir::describe(g, id) +
                    ")");
      in = b.expand(in, node.shape.dims);
      any = true;
    }
    if (!any)
      continue;
    ir::NodeId r = b.op(node.op, ins, node.attrs, node.name);
    g.replace_all_uses(id, r);
    changed = true;
  }
  if (changed)
    g.compact();
  return changed;
}

} // namespace rlx::compile
