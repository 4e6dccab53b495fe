// transforms.cpp: nth_order_grad, promote_params_to_inputs and the module forms.
#include "rlx/autodiff/transforms.hpp"

#include "helpers.hpp"
#include "rlx/ir/verify.hpp"

#include <algorithm>

namespace rlx::autodiff {

using namespace detail;
using ir::Graph;
using ir::Module;
using ir::Node;
using ir::OpKind;

Graph nth_order_grad(const Graph& forward, const Wrt& wrt, int n, const GradOptions& opts) {
  if (n < 1)
    fail("nth_order_grad: the order must be >= 1, got " + std::to_string(n));
  Graph g = prepare_graph_for_ad(forward);
  g.set_name(forward.name() + "_d" + std::to_string(n));
  if (opts.loss_output >= g.outputs().size())
    fail("nth_order_grad: loss_output " + std::to_string(opts.loss_output) + " but the graph has " +
         std::to_string(g.outputs().size()) + " outputs");
  NodeId loss = g.outputs()[opts.loss_output];
  const Shape ls = g.shape(loss);
  if (ls.is_tuple() || !is_float(ls.dtype) || !ls.is_static() || ls.numel() != 1)
    fail("nth_order_grad: the function value " + ir::describe(g, loss) + " is " + ls.str() +
         "; it must be a float value with one element");
  auto leaf_of = [&](const Graph& gr) {
    NodeId id = gr.find_leaf(wrt.name, wrt.param);
    if (!id.valid())
      fail("nth_order_grad: the graph has no " + std::string(wrt.param ? "param" : "input") +
           " named '" + wrt.name + "'");
    return id;
  };
  NodeId leaf = leaf_of(g);
  const Shape xs = g.shape(leaf);
  if (!is_float(xs.dtype) || !xs.is_static() || xs.numel() != 1)
    fail("nth_order_grad: '" + wrt.name + "' is " + xs.str() +
         "; nth_order_grad takes a float leaf with one element (a scalar function of one "
         "variable); use hvp for directional second derivatives");
  g.set_outputs({loss});
  g.compact();
  for (int k = 1; k <= n; ++k) {
    leaf = leaf_of(g);
    std::vector<NodeId> outs(g.outputs().begin(), g.outputs().end());
    NodeId d = append_gradient(g, outs.back(), leaf);
    if (!d.valid()) {
      // The first derivative follows the missing-gradient policy; a later one is a derivative of
      // a value that no longer depends on the leaf (x^2 has f''' = 0): zeros.
      if (k == 1 && opts.on_missing == MissingGradient::error)
        fail("nth_order_grad: no gradient reaches " + std::string(wrt.param ? "param" : "input") +
             " '" + wrt.name + "'; set GradOptions::on_missing = MissingGradient::zeros");
      Builder b(g);
      d = zeros(b, xs);
    }
    if (!(g.shape(d) == ls)) { // the leaf's type ([1] vs []) becomes the loss's
      Builder b(g);
      d = b.reshape(d, ls.dims);
    }
    outs.push_back(d);
    g.set_outputs(outs);
    simplify_ad(g);
  }
  ir::verify(g, {.allow_hir = false});
  return g;
}

Graph promote_params_to_inputs(const Graph& g, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (!g.find_leaf(name, true).valid())
      fail("promote_params_to_inputs: the graph has no param named '" + name + "'");
    if (g.find_leaf(name, false).valid())
      fail("promote_params_to_inputs: the graph already has an input named '" + name + "'");
  }
  Graph r(g.name());
  Builder b(r);
  std::vector<NodeId> map(g.size());
  for (NodeId id : g.ids()) {
    const Node& n = g.node(id);
    std::vector<NodeId> ins;
    for (NodeId x : n.inputs)
      ins.push_back(map[x.v]);
    if (n.op == OpKind::Param &&
        std::find(names.begin(), names.end(), n.attr<ir::LeafAttrs>().name) != names.end())
      map[id.v] = b.op(OpKind::Input, {}, n.attrs, n.name);
    else
      map[id.v] = b.op(n.op, std::move(ins), n.attrs, n.name);
  }
  std::vector<NodeId> outs;
  for (NodeId o : g.outputs())
    outs.push_back(map[o.v]);
  r.set_outputs(outs);
  // An in-place update of a promoted Param has no Param to write any more: it is dropped.
  std::vector<ir::OutputAlias> aliases;
  for (const auto& a : g.aliases())
    if (std::find(names.begin(), names.end(), a.param) == names.end())
      aliases.push_back(a);
  r.set_aliases(aliases);
  ir::verify(r);
  return r;
}

// ---- module forms -------------------------------------------------------------------------------

namespace {

const Graph& graph_of(const Module& m, const char* what) {
  if (m.stage() == ir::Stage::lir)
    fail(std::string(what) +
         ": the module is at the LIR stage (memory planned); transform its HIR or MIR module, "
         "then compile the result");
  return m.graph();
}

} // namespace

Module prepare_module_for_ad(const Module& m) {
  return Module::mir(prepare_graph_for_ad(graph_of(m, "prepare_module_for_ad")));
}

Module grad_with_loss(const Module& m, const std::vector<Wrt>& wrt, const GradOptions& opts) {
  return Module::mir(grad_with_loss(graph_of(m, "grad_with_loss"), wrt, opts));
}

Module jvp(const Module& m, const std::vector<Wrt>& wrt) {
  return Module::mir(jvp(graph_of(m, "jvp"), wrt));
}

Module hvp(const Module& m, const std::vector<Wrt>& wrt, const GradOptions& opts) {
  return Module::mir(hvp(graph_of(m, "hvp"), wrt, opts));
}

Module vmap(const Module& m, const std::vector<BatchedInput>& batched, const VmapOptions& opts) {
  return Module::mir(vmap(graph_of(m, "vmap"), batched, opts));
}

Module nth_order_grad(const Module& m, const Wrt& wrt, int n, const GradOptions& opts) {
  return Module::mir(nth_order_grad(graph_of(m, "nth_order_grad"), wrt, n, opts));
}

Module promote_params_to_inputs(const Module& m, const std::vector<std::string>& names) {
  Graph g = promote_params_to_inputs(graph_of(m, "promote_params_to_inputs"), names);
  return m.stage() == ir::Stage::hir ? Module::hir(std::move(g)) : Module::mir(std::move(g));
}

} // namespace rlx::autodiff
