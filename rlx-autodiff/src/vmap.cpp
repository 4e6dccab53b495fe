// vmap.cpp: the batching walk (vmap), its pre-pass and the VmapContext helpers.
#include "rlx/autodiff/vmap.hpp"

#include "decompose_ad.hpp"
#include "helpers.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/verify.hpp"
#include "vmap_internal.hpp"

#include <map>
#include <optional>

namespace rlx::autodiff {

using namespace detail;
using ir::Dim;
using ir::Graph;
using ir::Node;
using ir::OpKind;

// ---- VmapContext --------------------------------------------------------------------------------

std::size_t VmapContext::rank(std::size_t i) const {
  std::size_t r = b.shape(in[i]).rank();
  return batched[i] ? r - 1 : r;
}

NodeId VmapContext::lifted(std::size_t i) {
  if (batched[i])
    return in[i];
  std::vector<Dim> dims{size};
  const Shape& s = b.shape(in[i]);
  dims.insert(dims.end(), s.dims.begin(), s.dims.end());
  return b.expand(in[i], dims);
}

NodeId VmapContext::aligned(std::size_t i, std::size_t r) {
  if (!batched[i] || rank(i) >= r)
    return in[i];
  const Shape& s = b.shape(in[i]);
  std::vector<Dim> dims{s[0]};
  for (std::size_t k = rank(i); k < r; ++k)
    dims.emplace_back(1);
  dims.insert(dims.end(), s.dims.begin() + 1, s.dims.end());
  return b.reshape(in[i], dims);
}

void VmapContext::fail(const std::string& why) const {
  detail::fail("vmap: " + where + ": " + why);
}

namespace detail {

Shape batched_type(const Shape& s, const Dim& size) {
  if (s.is_tuple()) {
    std::vector<Shape> parts;
    for (const Shape& p : s.parts)
      parts.push_back(batched_type(p, size));
    return Shape::tuple(std::move(parts));
  }
  std::vector<Dim> dims{size};
  dims.insert(dims.end(), s.dims.begin(), s.dims.end());
  return Shape(std::move(dims), s.dtype);
}

NodeId move_axis(Builder& b, NodeId x, std::size_t from, std::size_t to) {
  if (from == to)
    return x;
  const std::size_t r = b.shape(x).rank();
  std::vector<std::int64_t> perm;
  for (std::size_t i = 0; i < r; ++i)
    if (i != from)
      perm.push_back(static_cast<std::int64_t>(i));
  perm.insert(perm.begin() + static_cast<std::ptrdiff_t>(to), static_cast<std::int64_t>(from));
  return b.transpose(x, perm);
}

} // namespace detail

namespace {

/// Which nodes depend on a batched Input.
std::vector<char> batched_reach(const Graph& g, const std::map<std::string, std::int64_t>& axes) {
  std::vector<char> reach(g.size(), 0);
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(NodeId(i));
    if (n.op == OpKind::Input)
      reach[i] = axes.count(n.attr<ir::LeafAttrs>().name) ? 1 : 0;
    for (NodeId x : n.inputs)
      reach[i] = reach[i] || reach[x.v];
  }
  return reach;
}

/// The pre-pass: HIR lowering, then every node that sees a batched value and whose op is batched
/// through its decomposition (or needs it for this operand combination) is replaced by it.
Graph prepare_for_vmap(const Graph& src, const std::map<std::string, std::int64_t>& axes) {
  Graph g = ir::has_hir_ops(src) ? ir::lower_hir(src) : src;
  for (int round = 0; round < 32; ++round) {
    std::vector<char> reach = batched_reach(g, axes);
    bool changed = false;
    Builder b(g);
    const auto n = static_cast<std::uint32_t>(g.size());
    for (std::uint32_t i = 0; i < n; ++i) {
      NodeId id(i);
      const Node node = g.node(id);
      if (ir::is_leaf(node.op) || !reach[i] || g.use_count(id) == 0)
        continue;
      // An operand added this round (a value of an earlier node's decomposition, rewired into
      // this node) lies past `reach`: it stems from a batched node, so it counts as batched.
      std::uint32_t mask = 0;
      for (std::size_t s = 0; s < node.inputs.size() && s < 32; ++s)
        if (node.inputs[s].v >= reach.size() || reach[node.inputs[s].v])
          mask |= 1u << s;
      const BatchRule* rule = batch_rule(node.op);
      if (rule == nullptr || rule->unbatchable != nullptr)
        continue; // the walk names it
      if (!rule->via_decomposition && !(rule->decompose_when && rule->decompose_when(node, mask)))
        continue;
      NodeId d;
      std::string why;
      if (node.op == OpKind::ElementwiseRegion && node.shape.is_tuple()) {
        // Several results: the body inlined, each Get of the region reading its output.
        std::vector<NodeId> in = node.inputs;
        std::vector<NodeId> outs =
            ir::inline_subgraph(b, *node.attr<ir::RegionAttrs>().body, in, "vmap");
        std::vector<NodeId> users(g.users(id).begin(), g.users(id).end());
        for (NodeId u : users) {
          if (g.node(u).op != OpKind::Get)
            fail("vmap: " + ir::describe(g, id) + " is read by " + ir::describe(g, u) +
                 ", not by get");
          g.replace_all_uses(u,
                             outs[static_cast<std::size_t>(g.node(u).attr<ir::GetAttrs>().index)]);
        }
        changed = true;
        continue;
      }
      std::vector<NodeId> values;
      if (node.op == OpKind::Conv2d) {
        std::vector<NodeId> in = node.inputs;
        d = conv_primitives(b, node.attr<ir::Conv2dAttrs>(), in);
        values.push_back(d);
      } else {
        // One value per result: a tuple-typed op's (residual norms, norm grads) gets read its
        // parts.
        values = ir::decompose_values(b, id, {}, why);
      }
      if (values.empty() || !values[0].valid())
        fail("vmap: " + ir::describe(g, id) + " sees a batched value and is batched through its " +
             "decomposition, which does not apply: " + why);
      ir::replace_by_values(g, id, values);
      changed = true;
    }
    if (!changed)
      return g;
    g.compact();
  }
  fail("vmap: decompositions of '" + src.name() + "' did not converge in 32 rounds");
}

/// The walk: copies \p src into a new graph, batching what depends on a batched Input.
/// \p axes: batched Input name -> axis of the batch dim in the values fed (normalised).
/// \p out_axis absent (a sub-graph): output i is batched at axis 0 when \p body_out[i] (all when
/// empty), and must be unbatched otherwise.
Graph vmap_impl(const Graph& src, const std::map<std::string, std::int64_t>& axes, const Dim& size,
                std::optional<std::int64_t> out_axis, const std::vector<bool>& body_out = {}) {
  Graph g = prepare_for_vmap(src, axes);
  Graph dst(src.name() + "_vmap");
  Builder b(dst);
  struct Value {
    NodeId id;
    bool batched = false;
  };
  std::vector<Value> val(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const Node node = g.node(NodeId(i));
    if (node.op == OpKind::Input) {
      const auto& leaf = node.attr<ir::LeafAttrs>();
      auto it = axes.find(leaf.name);
      if (it == axes.end()) {
        val[i] = {b.input(leaf.name, node.shape), false};
        continue;
      }
      std::vector<Dim> dims = node.shape.dims;
      auto ax = static_cast<std::size_t>(it->second);
      dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(ax), size);
      NodeId in = b.input(leaf.name, Shape(dims, node.shape.dtype));
      val[i] = {move_axis(b, in, ax, 0), true};
      continue;
    }
    if (node.op == OpKind::Param) {
      val[i] = {b.param(node.attr<ir::LeafAttrs>().name, node.shape), false};
      continue;
    }
    std::vector<NodeId> ins;
    std::vector<bool> bat;
    bool any = false;
    for (NodeId x : node.inputs) {
      ins.push_back(val[x.v].id);
      bat.push_back(val[x.v].batched);
      any = any || val[x.v].batched;
    }
    if (!any) {
      val[i] = {b.op(node.op, std::move(ins), node.attrs, node.name), false};
      continue;
    }
    const BatchRule* rule = batch_rule(node.op);
    const std::string where = ir::describe(g, NodeId(i));
    if (rule == nullptr || rule->unbatchable != nullptr)
      fail("vmap: " + where + " cannot be batched (" +
           (rule ? std::string(rule->unbatchable) : std::string("no batching rule")) + ")");
    if (rule->fn == nullptr)
      fail("internal: vmap: " + where + " should have been decomposed before the walk");
    VmapContext ctx{b, node, std::move(ins), std::move(bat), size, where};
    NodeId r = rule->fn(ctx);
    const Shape want = batched_type(node.shape, size);
    if (!(b.shape(r) == want))
      fail("internal: vmap: the batching rule of " + where + " gave " + b.shape(r).str() +
           ", not " + want.str());
    val[i] = {r, true};
  }
  std::vector<NodeId> outs;
  for (std::size_t k = 0; k < g.outputs().size(); ++k) {
    NodeId o = g.outputs()[k];
    Value v = val[o.v];
    if (!out_axis) { // vmap_body
      if (!body_out.empty() && !body_out[k]) {
        if (v.batched)
          fail("internal: vmap: output " + std::to_string(k) + " of sub-graph '" + src.name() +
               "' depends on a batched input");
        outs.push_back(v.id);
        continue;
      }
      VmapContext ctx{b, g.node(o), {v.id}, {v.batched}, size, ir::describe(g, o)};
      outs.push_back(ctx.lifted(0));
      continue;
    }
    const Shape& s = g.shape(o);
    if (s.is_tuple())
      fail("vmap: output " + ir::describe(g, o) + " is a tuple");
    auto to =
        static_cast<std::size_t>(ir::normalize_axis(*out_axis, s.rank() + 1, "vmap out_axis"));
    VmapContext ctx{b, g.node(o), {v.id}, {v.batched}, size, ir::describe(g, o)};
    outs.push_back(move_axis(b, ctx.lifted(0), 0, to));
  }
  dst.set_outputs(outs);
  dst.compact();
  ir::verify(dst, {.allow_hir = false});
  return dst;
}

} // namespace

Graph vmap(const Graph& g, const std::vector<BatchedInput>& batched, const VmapOptions& opts) {
  if (batched.empty())
    fail("vmap: no batched input given");
  std::map<std::string, std::int64_t> axes;
  for (const BatchedInput& bi : batched) {
    NodeId id = g.find_leaf(bi.name, false);
    if (!id.valid())
      fail("vmap: the graph has no input named '" + bi.name + "'" +
           (g.find_leaf(bi.name, true).valid()
                ? " (it is a param: promote_params_to_inputs makes it an input)"
                : ""));
    if (axes.count(bi.name))
      fail("vmap: input '" + bi.name + "' is listed twice");
    axes[bi.name] = ir::normalize_axis(bi.axis, g.shape(id).rank() + 1, "vmap input axis");
  }
  std::optional<Dim> size;
  if (opts.size) {
    if (*opts.size < 0)
      fail("vmap: batch size " + std::to_string(*opts.size) + " is negative");
    size = Dim(*opts.size);
  } else {
    size = Dim::sym(kVmapBatchSymbol);
    for (const std::string& sym : g.symbols())
      if (sym == kVmapBatchSymbol)
        fail("vmap: the graph already uses the symbol '" + std::string(kVmapBatchSymbol) + "'");
  }
  return vmap_impl(g, axes, *size, opts.out_axis);
}

namespace detail {

Graph vmap_body(const Graph& body, const std::vector<bool>& batched, const Dim& size,
                const std::vector<bool>& batched_outputs) {
  std::map<std::string, std::int64_t> axes;
  std::vector<NodeId> ins = body.inputs();
  for (std::size_t i = 0; i < ins.size() && i < batched.size(); ++i)
    if (batched[i])
      axes[body.node(ins[i]).attr<ir::LeafAttrs>().name] = 0;
  return vmap_impl(body, axes, size, std::nullopt, batched_outputs);
}

} // namespace detail

} // namespace rlx::autodiff
