// lower_control_flow.cpp: the lower-control-flow pass, If and While to straight-line code, for
// backends that claim neither (rlx-cpu runs them for real; legalisation uses these forms only for
// a backend that does not claim If / While).
//
// If(pred, captures...) becomes Where(pred, then(captures), else(captures)) with both branches
// inlined: both are evaluated, the predicate selects. That is only sound when neither branch can
// fail at run time: a guarded `d != 0 ? x / d : 0` must not divide by zero when d is 0. So a
// branch holding an op that can reject a value (ops.def's kMayFail / kMayFailInt flags: integer
// Div, Gather, DenseSolve, Quantize, Custom ...) is not lowered: the node stays unsupported and
// the compile fails with an error naming that op, instead of a run that throws (or computes) what
// the program guarded against.
//
// While(init...) with cond, body and max_iterations N becomes N guarded copies, matching the
// reference interpreter exactly (cond is tested before every body run; the loop stops after N
// body runs even if cond still holds):
//     active_0 = cond(carry_0)
//     carry_{k+1} = Where(active_k, body(carry_k), carry_k)
//     active_{k+1} = Where(active_k, cond(carry_{k+1}), false)
// and the node's value is carry_N[output_index]. The last cond copy is never needed and is not
// emitted. The body is still evaluated on iterations where the loop has stopped (values are then
// discarded by the Where), so, as for If, cond and body must both be total. A While whose
// unrolled form would exceed PassOptions::unroll_max_nodes nodes is an error, not a silent
// blow-up of the graph.
//
// Nested control flow is lowered by repeating until none is left.
#include "rlx/compile/passes.hpp"

#include "decompose.hpp"
#include "graph_util.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::compile {

namespace detail {

ir::NodeId lower_if(ir::Builder& b, ir::NodeId id, const fusion::PassOptions&, std::string& why) {
  const ir::Node n = b.graph().node(id);
  const auto& a = n.attr<ir::IfAttrs>();
  for (const ir::Graph* branch : {&*a.then_branch, &*a.else_branch}) {
    const std::string fallible = first_fallible(*branch);
    if (!fallible.empty()) {
      why = "lowering to Where evaluates both branches, and " + fallible +
            " can fail at run time when its branch is not taken; the backend must claim If";
      return {};
    }
  }
  std::vector<ir::NodeId> captures(n.inputs.begin() + 1, n.inputs.end());
  const std::string what = "lower if " + ir::describe(b.graph(), id);
  ir::NodeId t = inline_subgraph(b, *a.then_branch, captures, what).at(0);
  ir::NodeId e = inline_subgraph(b, *a.else_branch, captures, what).at(0);
  return b.where(n.inputs[0], t, e);
}

ir::NodeId lower_while(ir::Builder& b, ir::NodeId id, const fusion::PassOptions& opts,
                       std::string& why) {
  const ir::Node n = b.graph().node(id);
  const auto& a = n.attr<ir::WhileAttrs>();
  for (const ir::Graph* part : {&*a.cond, &*a.body}) {
    const std::string fallible = first_fallible(*part);
    if (!fallible.empty()) {
      why = "unrolling evaluates cond and body even after the loop has stopped, and " + fallible +
            " can fail at run time then; the backend must claim While";
      return {};
    }
  }
  const std::int64_t per_iteration =
      static_cast<std::int64_t>(a.cond->size() + a.body->size() + 2 * n.inputs.size());
  if (a.max_iterations > 0 && per_iteration > opts.unroll_max_nodes / a.max_iterations) {
    why = "unrolling " + std::to_string(a.max_iterations) + " iterations of " +
          std::to_string(per_iteration) + " nodes exceeds the limit of " +
          std::to_string(opts.unroll_max_nodes) + " nodes (PassOptions::unroll_max_nodes)";
    return {};
  }
  const std::string what = "lower while " + ir::describe(b.graph(), id);
  std::vector<ir::NodeId> carry = n.inputs;
  if (a.max_iterations > 0) {
    ir::NodeId active = inline_subgraph(b, *a.cond, carry, what).at(0);
    const ir::NodeId no = b.scalar(0, ir::DType::boolean);
    for (std::int64_t k = 0; k < a.max_iterations; ++k) {
      std::vector<ir::NodeId> next = inline_subgraph(b, *a.body, carry, what);
      if (next.size() != carry.size())
        throw Error(what + ": body returns " + std::to_string(next.size()) + " values for " +
                    std::to_string(carry.size()) + " carries");
      for (std::size_t j = 0; j < carry.size(); ++j)
        carry[j] = b.where(active, next[j], carry[j]);
      if (k + 1 < a.max_iterations)
        active = b.where(active, inline_subgraph(b, *a.cond, carry, what).at(0), no);
    }
  }
  return carry.at(static_cast<std::size_t>(a.output_index));
}

} // namespace detail

bool LowerControlFlowPass::run(ir::Graph& g, fusion::PassContext& ctx) {
  bool changed = false;
  for (int round = 0;; ++round) {
    bool any = false;
    const std::size_t n = g.size();
    for (std::uint32_t i = 0; i < n; ++i) {
      const ir::NodeId id(i);
      const ir::OpKind op = g.node(id).op;
      if ((op != ir::OpKind::If && op != ir::OpKind::While) || g.use_count(id) == 0)
        continue;
      ir::Builder b(g);
      std::string why;
      ir::NodeId r = op == ir::OpKind::If ? detail::lower_if(b, id, ctx.options, why)
                                          : detail::lower_while(b, id, ctx.options, why);
      if (!r.valid())
        throw Error("lower-control-flow: cannot lower " + ir::describe(g, id) + ": " + why);
      g.replace_all_uses(id, r);
      any = true;
    }
    if (!any)
      break;
    g.compact();
    changed = true;
    if (round > 64)
      throw Error("lower-control-flow: control flow nested deeper than 64 levels");
  }
  return changed;
}

} // namespace rlx::compile
