// jvp.cpp: the forward-mode walk (jvp), the If rule's body transform, and hvp.
#include "rlx/autodiff/jvp.hpp"

#include "helpers.hpp"
#include "jvp_table.hpp"
#include "rlx/ir/verify.hpp"

#include <unordered_map>

namespace rlx::autodiff {

using namespace detail;
using ir::Graph;
using ir::Node;
using ir::OpKind;

namespace {

class ForwardWalker {
public:
  explicit ForwardWalker(Graph& g) : g_(g), b_(g) {}

  /// Pushes tangents through nodes [lo, hi) in order.
  void push(std::uint32_t lo, std::uint32_t hi, std::unordered_map<NodeId, NodeId>& tan) {
    for (std::uint32_t i = lo; i < hi; ++i) {
      NodeId id(i);
      Node node = g_.node(id); // copy: the graph grows below
      if (ir::is_leaf(node.op))
        continue;
      std::vector<NodeId> tin(node.inputs.size());
      bool any = false;
      for (std::size_t s = 0; s < node.inputs.size(); ++s) {
        auto it = tan.find(node.inputs[s]);
        if (it != tan.end()) {
          tin[s] = it->second;
          any = true;
        }
      }
      if (!any)
        continue;
      const Shape& ys = node.shape;
      bool float_out = ys.is_tuple() ? is_float(ys.parts[0].dtype) : is_float(ys.dtype);
      if (!float_out && node.op != OpKind::Get)
        continue;
      const JvpRule* rule = jvp_rule(node.op);
      if (rule == nullptr)
        fail("jvp: no JVP rule for " + ir::describe(g_, id) +
             (ir::is_differentiable(node.op) ? "" : " (the op is not differentiable)") +
             ", which depends on a tangent");
      JvpContext ctx{b_, node, id, node.inputs, tin, {}};
      ctx.decompose = [this, &ctx](const auto& emit) { return local(ctx, emit); };
      NodeId t = rule->fn(ctx);
      if (!t.valid())
        continue;
      if (!(g_.shape(t) == ys))
        fail("internal: the JVP rule of " + ir::describe(g_, id) + " gave a tangent of type " +
             g_.shape(t).str() + ", not " + ys.str());
      tan[id] = t;
    }
  }

  Builder& builder() { return b_; }

private:
  NodeId local(const JvpContext& ctx,
               const std::function<NodeId(Builder&, std::span<const NodeId>)>& emit) {
    auto lo = static_cast<std::uint32_t>(g_.size());
    NodeId out = emit(b_, ctx.in);
    auto hi = static_cast<std::uint32_t>(g_.size());
    std::unordered_map<NodeId, NodeId> tan;
    for (std::size_t s = 0; s < ctx.in.size(); ++s)
      if (ctx.tin[s].valid())
        tan[ctx.in[s]] = ctx.tin[s];
    push(lo, hi, tan);
    auto it = tan.find(out);
    return it == tan.end() ? NodeId{} : it->second;
  }

  Graph& g_;
  Builder b_;
};

} // namespace

std::string tangent_name(const std::string& name) {
  return "tangent_" + name;
}

Graph jvp(const Graph& forward, const std::vector<Wrt>& wrt) {
  Graph g = prepare_graph_for_ad(forward);
  g.set_name(forward.name() + "_jvp");
  Builder b(g);
  std::unordered_map<NodeId, NodeId> tan;
  for (const Wrt& w : wrt) {
    NodeId leaf = g.find_leaf(w.name, w.param);
    if (!leaf.valid())
      fail("jvp: the graph has no " + std::string(w.param ? "param" : "input") + " named '" +
           w.name + "'");
    if (!is_float(g.shape(leaf).dtype))
      fail("jvp: '" + w.name + "' is " + g.shape(leaf).str() + "; only float values have tangents");
    if (g.find_leaf(tangent_name(w.name), false).valid())
      fail("jvp: the graph already has an input named '" + tangent_name(w.name) + "'");
    tan[leaf] = b.input(tangent_name(w.name), g.shape(leaf));
  }
  auto n = static_cast<std::uint32_t>(g.size());
  std::vector<NodeId> outs(g.outputs().begin(), g.outputs().end());
  ForwardWalker walk(g);
  walk.push(0, n, tan);
  std::size_t primal = outs.size();
  for (std::size_t i = 0; i < primal; ++i) {
    auto it = tan.find(outs[i]);
    outs.push_back(it != tan.end() ? it->second : zeros(walk.builder(), g.shape(outs[i])));
  }
  g.set_outputs(outs);
  g.compact();
  ir::verify(g, {.allow_hir = false});
  return g;
}

Graph hvp(const Graph& forward, const std::vector<Wrt>& wrt, const GradOptions& opts) {
  Graph gg = grad_with_loss(forward, wrt, opts);
  Graph j = jvp(gg, wrt);
  // outputs of j: [loss, grads..., t(loss), t(grads)...]
  std::size_t n = wrt.size();
  std::vector<NodeId> outs;
  for (std::size_t i = 0; i <= n; ++i)
    outs.push_back(j.outputs()[i]);
  for (std::size_t i = 0; i < n; ++i)
    outs.push_back(j.outputs()[n + 2 + i]);
  j.set_outputs(outs);
  j.set_name(forward.name() + "_hvp");
  j.compact();
  ir::verify(j, {.allow_hir = false});
  return j;
}

} // namespace rlx::autodiff

namespace rlx::autodiff::detail {

ir::Graph jvp_body(const ir::Graph& body) {
  std::vector<Wrt> wrt;
  for (NodeId in : body.inputs())
    wrt.push_back({body.node(in).attr<ir::LeafAttrs>().name, false});
  Graph j = jvp(body, wrt);
  j.set_outputs({j.outputs()[1]});
  j.compact();
  return j;
}

} // namespace rlx::autodiff::detail
