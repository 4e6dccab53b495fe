// control_flow.cpp: sub-graph inlining, and the decompositions of the ops with sub-graphs (If,
// While, CustomFn) and of the HIR blocks.
//
// If(pred, captures...) becomes Where(pred, then(captures), else(captures)) with both branches
// inlined: both are evaluated, the predicate selects. That is only sound when neither branch can
// fail at run time: a guarded `d != 0 ? x / d : 0` must not divide by zero when d is 0. So a
// branch holding an op that can reject a value (ops.def's kMayFail / kMayFailInt flags: integer
// Div, Gather, DenseSolve, Quantize, Custom ...) is not lowered. Nor is one with effects
// (ir::has_effects: a Custom op registered with has_effects, an unregistered one): running the
// untaken branch would perform them. The node then stays unsupported and the compile fails with an
// error naming the op, instead of a run that throws, computes or does what the program guarded
// against.
//
// While(init...) with cond, body and max_iterations N becomes N guarded copies, matching the
// reference interpreter exactly (cond is tested before every body run; the loop stops after N
// body runs even if cond still holds):
//     active_0 = cond(carry_0)
//     carry_{k+1} = Where(active_k, body(carry_k), carry_k)
//     active_{k+1} = Where(active_k, cond(carry_{k+1}), false)
// and the node's value is carry_N[output_index]. The last cond copy is never needed and is not
// emitted. The body is still evaluated on iterations where the loop has stopped (values are then
// discarded by the Where), so, as for If, cond and body must both be total and free of effects.
// A While whose unrolled form would exceed DecomposeOptions::unroll_max_nodes nodes does not
// apply, rather than silently blowing up the graph.
#include "families.hpp"

#include "rlx/ir/effects.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"

#include <type_traits>
#include <variant>

namespace rlx::ir {

std::vector<NodeId> inline_subgraph(Builder& b, const Graph& sub, std::span<const NodeId> args,
                                    std::string_view what) {
  std::vector<NodeId> map(sub.size());
  std::size_t next_arg = 0;
  for (NodeId id : sub.ids()) {
    const Node& n = sub.node(id);
    switch (n.op) {
    case OpKind::Input:
      if (next_arg >= args.size())
        throw Error(std::string(what) + ": sub-graph '" + sub.name() + "' takes more inputs than " +
                    std::to_string(args.size()) + " operands");
      map[id.v] = args[next_arg++];
      break;
    case OpKind::Param:
      throw Error(std::string(what) + ": sub-graph '" + sub.name() + "' holds param '" +
                  n.attr<LeafAttrs>().name + "'; sub-graphs take every value as an input");
    default: {
      std::vector<NodeId> ins;
      ins.reserve(n.inputs.size());
      for (NodeId in : n.inputs)
        ins.push_back(map[in.v]);
      map[id.v] = b.op(n.op, std::move(ins), n.attrs, n.name);
    }
    }
  }
  if (next_arg != args.size())
    throw Error(std::string(what) + ": sub-graph '" + sub.name() + "' takes " +
                std::to_string(next_arg) + " inputs, got " + std::to_string(args.size()));
  std::vector<NodeId> outs;
  for (NodeId o : sub.outputs())
    outs.push_back(map[o.v]);
  return outs;
}

std::string first_fallible(const Graph& g) {
  for (NodeId id : g.ids()) {
    const Node& n = g.node(id);
    const bool int_operands = !n.inputs.empty() && is_int(g.shape(n.inputs[0]).dtype);
    if (has_flag(n.op, kMayFail) || (has_flag(n.op, kMayFailInt) && int_operands))
      return describe(g, id) + (int_operands ? " (integer)" : "") + " in sub-graph '" + g.name() +
             "'";
    if (!has_flag(n.op, kSubgraphs))
      continue;
    std::string inner;
    std::visit(
        [&](const auto& a) {
          using A = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<A, IfAttrs>) {
            inner = first_fallible(*a.then_branch);
            if (inner.empty())
              inner = first_fallible(*a.else_branch);
          } else if constexpr (std::is_same_v<A, WhileAttrs>) {
            inner = first_fallible(*a.cond);
            if (inner.empty())
              inner = first_fallible(*a.body);
          } else if constexpr (std::is_same_v<A, CustomFnAttrs>) {
            inner = first_fallible(*a.body);
          }
        },
        n.attrs);
    if (!inner.empty())
      return inner;
  }
  return {};
}

namespace {

/// The first node of \p g with effects, described, or an empty string.
std::string first_with_effects(const Graph& g) {
  for (NodeId id : g.ids())
    if (has_effects(g, id))
      return describe(g, id) + " in sub-graph '" + g.name() + "'";
  return {};
}

/// Why sub-graph \p g cannot be evaluated when its result is discarded (\p when says when that
/// happens), or an empty string when it can.
std::string not_speculable(const Graph& g, std::string_view when) {
  std::string what = first_with_effects(g);
  if (!what.empty())
    return std::string(when) + ", and " + what + " has effects";
  what = first_fallible(g);
  if (!what.empty())
    return std::string(when) + ", and " + what + " can fail at run time then";
  return {};
}

} // namespace

NodeId lower_if(Builder& b, NodeId id, const DecomposeOptions&, std::string& why) {
  const Node n = b.graph().node(id);
  const auto& a = n.attr<IfAttrs>();
  for (const Graph* branch : {&*a.then_branch, &*a.else_branch}) {
    const std::string bad = not_speculable(
        *branch, "lowering to Where evaluates both branches (also the one not taken)");
    if (!bad.empty()) {
      why = bad + "; the backend must claim If";
      return {};
    }
  }
  std::vector<NodeId> captures(n.inputs.begin() + 1, n.inputs.end());
  const std::string what = "lower if " + describe(b.graph(), id);
  NodeId t = inline_subgraph(b, *a.then_branch, captures, what).at(0);
  NodeId e = inline_subgraph(b, *a.else_branch, captures, what).at(0);
  return b.where(n.inputs[0], t, e);
}

NodeId lower_while(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why) {
  const Node n = b.graph().node(id);
  const auto& a = n.attr<WhileAttrs>();
  for (const Graph* part : {&*a.cond, &*a.body}) {
    const std::string bad =
        not_speculable(*part, "unrolling evaluates cond and body even after the loop has stopped");
    if (!bad.empty()) {
      why = bad + "; the backend must claim While";
      return {};
    }
  }
  const std::int64_t per_iteration =
      static_cast<std::int64_t>(a.cond->size() + a.body->size() + 2 * n.inputs.size());
  if (a.max_iterations > 0 && per_iteration > opts.unroll_max_nodes / a.max_iterations) {
    why = "unrolling " + std::to_string(a.max_iterations) + " iterations of " +
          std::to_string(per_iteration) + " nodes exceeds the limit of " +
          std::to_string(opts.unroll_max_nodes) + " nodes (DecomposeOptions::unroll_max_nodes)";
    return {};
  }
  const std::string what = "lower while " + describe(b.graph(), id);
  std::vector<NodeId> carry = n.inputs;
  if (a.max_iterations > 0) {
    NodeId active = inline_subgraph(b, *a.cond, carry, what).at(0);
    const NodeId no = b.scalar(0, DType::boolean);
    for (std::int64_t k = 0; k < a.max_iterations; ++k) {
      std::vector<NodeId> next = inline_subgraph(b, *a.body, carry, what);
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

namespace decompose_detail {

namespace {

// custom_fn(args) = body(args), inlined.
NodeId custom_fn_inline(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  return inline_subgraph(b, *n.attr<CustomFnAttrs>().body, n.inputs,
                         "inline " + describe(b.graph(), id))
      .at(0);
}

// HIR blocks: their MIR decomposition (hir.hpp).
NodeId hir_decompose(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  return decompose_hir(b, n, n.inputs);
}

} // namespace

void add_control_flow_decompositions(DecompositionTable& t) {
  t.set(OpKind::If, {{"lower_if", lower_if}});
  t.set(OpKind::While, {{"lower_while", lower_while}});
  t.set(OpKind::CustomFn, {{"custom_fn_inline", custom_fn_inline}});
  for_each_op([&](OpKind k) {
    if (is_hir(k))
      t.set(k, {{"hir_decompose", hir_decompose}});
  });
}

} // namespace decompose_detail

} // namespace rlx::ir
