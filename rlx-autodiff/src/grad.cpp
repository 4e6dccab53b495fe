// grad.cpp: the reverse-mode walk (grad_with_loss) and the AD pre-pass.
#include "rlx/autodiff/grad.hpp"

#include "helpers.hpp"
#include "rlx/autodiff/vjp_rules.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/verify.hpp"

#include <unordered_map>

namespace rlx::autodiff {

using namespace detail;
using ir::Graph;
using ir::Node;
using ir::OpKind;

namespace {

/// Gradients accumulated so far: per node, and per part for tuple-typed nodes.
struct Grads {
  std::unordered_map<NodeId, NodeId> of;
  std::unordered_map<NodeId, std::vector<NodeId>> parts;
};

class Walker {
public:
  explicit Walker(Graph& g) : g_(g), b_(g) {}

  /// Marks the nodes whose value depends on a wrt leaf (the only ones worth differentiating).
  void mark_reach(const std::vector<NodeId>& wrt) {
    reach_.assign(g_.size(), 0);
    for (NodeId w : wrt)
      reach_[w.v] = 1;
    extend_reach(0);
  }

  /// Walks nodes top..lo (descending), propagating \p grads; nodes below \p lo only collect.
  void backprop(NodeId top, std::uint32_t lo, Grads& grads) {
    for (std::int64_t i = top.v; i >= static_cast<std::int64_t>(lo); --i) {
      NodeId id(static_cast<std::uint32_t>(i));
      Node node = g_.node(id); // copy: the graph grows below
      if (ir::is_leaf(node.op))
        continue;
      std::vector<NodeId> part_ups;
      NodeId up;
      if (node.shape.is_tuple()) {
        auto it = grads.parts.find(id);
        if (it == grads.parts.end())
          continue;
        part_ups = it->second;
      } else {
        auto it = grads.of.find(id);
        if (it == grads.of.end())
          continue;
        up = it->second;
      }
      if (node.op == OpKind::Get) {
        NodeId t = node.inputs[0];
        auto& parts = grads.parts[t];
        parts.resize(g_.shape(t).parts.size());
        auto k = static_cast<std::size_t>(node.attr<ir::GetAttrs>().index);
        parts[k] = parts[k].valid() ? b_.add(parts[k], up) : up;
        continue;
      }
      const VjpRule* rule = vjp_rule(node.op);
      const std::uint32_t fixed = non_differentiable_operands(node);
      std::vector<bool> needs(node.inputs.size());
      bool any = false;
      for (std::size_t s = 0; s < node.inputs.size(); ++s) {
        NodeId x = node.inputs[s];
        needs[s] = reach_[x.v] && !g_.shape(x).is_tuple() && is_float(g_.shape(x).dtype) &&
                   !((fixed >> s) & 1u);
        any = any || needs[s];
      }
      if (!any)
        continue;
      if (rule == nullptr)
        fail("autodiff: no VJP rule for " + ir::describe(g_, id) +
             (ir::is_differentiable(node.op) ? "" : " (the op is not differentiable)") +
             ", which lies between a wrt leaf and the loss");
      VjpContext ctx{b_, node, id, node.inputs, up, part_ups, needs, {}};
      ctx.decompose = [this, &ctx](const auto& emit) { return local(ctx, emit); };
      std::vector<NodeId> dx = rule->fn(ctx);
      if (dx.size() != node.inputs.size())
        fail("internal: the VJP rule of " + ir::describe(g_, id) + " returned " +
             std::to_string(dx.size()) + " gradients for " + std::to_string(node.inputs.size()) +
             " operands");
      for (std::size_t s = 0; s < dx.size(); ++s) {
        if (!dx[s].valid() || !needs[s])
          continue;
        NodeId x = node.inputs[s];
        if (!(g_.shape(dx[s]) == g_.shape(x)))
          fail("internal: the VJP rule of " + ir::describe(g_, id) + " gave operand " +
               std::to_string(s) + " a gradient of type " + g_.shape(dx[s]).str() + ", not " +
               g_.shape(x).str());
        auto [it, fresh] = grads.of.try_emplace(x, dx[s]);
        if (!fresh)
          it->second = b_.add(it->second, dx[s]);
      }
    }
  }

  Builder& builder() { return b_; }

private:
  /// Sets the reach of nodes \p from.. from their operands'.
  void extend_reach(std::size_t from) {
    reach_.resize(g_.size(), 0);
    for (std::size_t i = from; i < g_.size(); ++i) {
      const Node& n = g_.node(NodeId(static_cast<std::uint32_t>(i)));
      for (NodeId x : n.inputs)
        if (reach_[x.v])
          reach_[i] = 1;
    }
  }

  /// VjpContext::decompose: emits the op's decomposition and walks it locally.
  std::vector<NodeId> local(const VjpContext& ctx,
                            const std::function<NodeId(Builder&, std::span<const NodeId>)>& emit) {
    auto lo = static_cast<std::uint32_t>(g_.size());
    NodeId out = emit(b_, ctx.in);
    if (!(g_.shape(out) == ctx.node.shape))
      fail("internal: the decomposition of " + ir::describe(g_, ctx.self) + " has type " +
           g_.shape(out).str() + ", not " + ctx.node.shape.str());
    // Only the operands that need a gradient seed the reach of the decomposition.
    std::vector<char> saved = reach_;
    for (std::size_t s = 0; s < ctx.in.size(); ++s)
      reach_[ctx.in[s].v] = ctx.needs[s] ? 1 : 0;
    reach_.resize(lo, 0);
    extend_reach(lo);
    Grads local;
    if (out.v < lo) { // the decomposition is one of the operands
      local.of[out] = ctx.up;
    } else {
      local.of[out] = ctx.up;
      backprop(out, lo, local);
    }
    saved.resize(g_.size(), 0);
    reach_ = std::move(saved);
    std::vector<NodeId> dx(ctx.in.size());
    for (std::size_t s = 0; s < ctx.in.size(); ++s) {
      auto it = local.of.find(ctx.in[s]);
      if (it != local.of.end() && ctx.needs[s]) {
        dx[s] = it->second;
        local.of.erase(it); // a repeated operand takes its whole gradient once
      }
    }
    return dx;
  }

  Graph& g_;
  Builder b_;
  std::vector<char> reach_;
};

NodeId find_wrt(const Graph& g, const Wrt& w) {
  NodeId id = g.find_leaf(w.name, w.param);
  if (!id.valid())
    fail("grad_with_loss: the graph has no " + std::string(w.param ? "param" : "input") +
         " named '" + w.name + "'");
  if (!is_float(g.shape(id).dtype))
    fail("grad_with_loss: " + std::string(w.param ? "param" : "input") + " '" + w.name + "' is " +
         g.shape(id).str() + "; only float values have gradients");
  return id;
}

} // namespace

std::vector<Wrt> float_params(const Graph& g) {
  std::vector<Wrt> r;
  for (NodeId p : g.params())
    if (is_float(g.shape(p).dtype))
      r.push_back({g.node(p).attr<ir::LeafAttrs>().name, true});
  return r;
}

Graph prepare_graph_for_ad(const Graph& g) {
  Graph r = ir::has_hir_ops(g) ? ir::lower_hir(g) : g;
  // Every float-valued op without a VJP rule (While, fused ops, tuple-typed ones too) is replaced
  // by its decomposition from rlx-ir's table, until none is left that has one (nested forms need
  // several rounds).
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    Builder b(r);
    const auto n = static_cast<std::uint32_t>(r.size());
    for (std::uint32_t i = 0; i < n; ++i) {
      NodeId id(i);
      const Node& node = r.node(id);
      if (ir::is_leaf(node.op) || vjp_rule(node.op) != nullptr || !is_float(node.shape.dtype) ||
          !ir::has_decomposition(node.op) || r.use_count(id) == 0)
        continue;
      // A tuple-typed op (the fused residual + norm) is expanded part by part: its gets read
      // the parts of its decomposition.
      std::string why;
      const std::vector<NodeId> d = ir::decompose_values(b, id, {}, why);
      if (d.empty())
        continue; // left to the walk, which names the op if a gradient must cross it
      ir::replace_by_values(r, id, d);
      changed = true;
    }
    if (!changed)
      break;
    r.compact();
  }
  ir::verify(r);
  return r;
}

Graph grad_with_loss(const Graph& forward, const std::vector<Wrt>& wrt, const GradOptions& opts) {
  Graph g = prepare_graph_for_ad(forward);
  g.set_name(forward.name() + "_grad");
  if (opts.loss_output >= g.outputs().size())
    fail("grad_with_loss: loss_output " + std::to_string(opts.loss_output) + " but the graph has " +
         std::to_string(g.outputs().size()) + " outputs");
  NodeId loss = g.outputs()[opts.loss_output];
  const Shape ls = g.shape(loss);
  if (ls.is_tuple() || !is_float(ls.dtype) || !ls.is_static() || ls.numel() != 1)
    fail("grad_with_loss: the loss " + ir::describe(g, loss) + " is " + ls.str() +
         "; it must be a float value with one element");
  std::vector<NodeId> leaves;
  for (const Wrt& w : wrt)
    leaves.push_back(find_wrt(g, w));

  Walker walk(g);
  walk.mark_reach(leaves);
  Grads grads;
  grads.of[loss] = full(walk.builder(), ls, 1.0);
  walk.backprop(loss, 0, grads);

  std::vector<NodeId> outs{loss};
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    auto it = grads.of.find(leaves[i]);
    if (it != grads.of.end()) {
      outs.push_back(it->second);
      continue;
    }
    if (opts.on_missing == MissingGradient::error)
      fail("grad_with_loss: no gradient reaches " + std::string(wrt[i].param ? "param" : "input") +
           " '" + wrt[i].name +
           "' (unused, or reached only through non-differentiable ops); "
           "set GradOptions::on_missing = MissingGradient::zeros to get zeros");
    outs.push_back(zeros(walk.builder(), g.shape(leaves[i])));
  }
  g.set_outputs(outs);
  g.compact();
  ir::verify(g, {.allow_hir = false});
  return g;
}

Graph grad_with_loss(const Graph& forward, const std::vector<NodeId>& wrt,
                     const GradOptions& opts) {
  std::vector<Wrt> named;
  for (NodeId id : wrt) {
    if (!id.valid() || id.v >= forward.size())
      fail("grad_with_loss: wrt id %" + std::to_string(id.v) + " is not a node of the graph");
    const Node& n = forward.node(id);
    if (n.op != OpKind::Param && n.op != OpKind::Input)
      fail("grad_with_loss: wrt " + ir::describe(forward, id) + " is not an input or a param");
    named.push_back({n.attr<ir::LeafAttrs>().name, n.op == OpKind::Param});
  }
  return grad_with_loss(forward, named, opts);
}

} // namespace rlx::autodiff

namespace rlx::autodiff::detail {

NodeId append_gradient(ir::Graph& g, NodeId loss, NodeId leaf) {
  Walker walk(g);
  walk.mark_reach({leaf});
  Grads grads;
  grads.of[loss] = full(walk.builder(), g.shape(loss), 1.0);
  walk.backprop(loss, 0, grads);
  auto it = grads.of.find(leaf);
  return it != grads.of.end() ? it->second : NodeId{};
}

ir::Graph vjp_body(const ir::Graph& body, std::size_t wrt_input) {
  Graph g = body;
  g.set_name(body.name() + "_vjp" + std::to_string(wrt_input));
  std::vector<NodeId> ins = g.inputs();
  if (wrt_input >= ins.size() || g.outputs().size() != 1)
    fail("internal: vjp_body of '" + body.name() + "'");
  NodeId out = g.outputs()[0];
  Builder b(g);
  NodeId seed = b.input("d_output", g.shape(out));
  NodeId leaf = ins[wrt_input];
  Walker walk(g);
  walk.mark_reach({leaf});
  Grads grads;
  grads.of[out] = seed;
  walk.backprop(out, 0, grads);
  auto it = grads.of.find(leaf);
  NodeId d = it != grads.of.end() ? it->second : zeros(walk.builder(), g.shape(leaf));
  g.set_outputs({d});
  g.compact();
  ir::verify(g, {.allow_hir = false});
  return g;
}

} // namespace rlx::autodiff::detail
