// interpreter.cpp: the reference interpreter's entry points: input binding, the per-node dispatch
// generated from ops.def, and whole-graph evaluation in node order.
#include "rlx/ir/reference.hpp"

#include "common.hpp"
#include "kernels.hpp"

#include <functional>

namespace rlx::ir::reference {
namespace {

Shape checked_type(const Node& node, std::span<const Tensor> args);

/// Where a symbol got its size, for the "contradictory symbol" message.
using SymbolOrigins = std::map<std::string, std::string>;

/// Checks \p value against the declared type \p want of \p what and binds its symbols into \p b.
void match_type(const Shape& want, const Tensor& value, const std::string& what, Bindings& b,
                SymbolOrigins& origins) {
  if (value.empty())
    fail(what + " has no value (an empty Tensor)");
  if (value.dtype() != want.dtype)
    fail(what + " has dtype " + std::string(dtype_name(value.dtype())) + ", expected " +
         want.str());
  if (value.shape().rank() != want.rank())
    fail(what + " has shape " + value.shape().str() + ", expected rank " +
         std::to_string(want.rank()) + " " + want.str());
  for (std::size_t d = 0; d < want.rank(); ++d) {
    std::int64_t got = value.shape()[d].size();
    const Dim& w = want[d];
    std::string where = what + " dim " + std::to_string(d);
    if (w.is_static()) {
      if (got != w.size())
        fail(where + " is " + std::to_string(got) + ", expected " + want.str() + " (got " +
             value.shape().str() + ")");
      continue;
    }
    auto [it, fresh] = b.emplace(w.symbol(), got);
    if (fresh)
      origins[w.symbol()] = where;
    else if (it->second != got)
      fail("contradictory sizes for symbol '" + w.symbol() + "': " + where + " is " +
           std::to_string(got) + " but " + origins[w.symbol()] + " bound it to " +
           std::to_string(it->second));
  }
}

/// \p g with \p b applied, or \p g itself when it has no symbols; throws when a symbol stays
/// unbound.
const Graph& bound_graph(const Graph& g, const Bindings& b, Graph& storage) {
  if (g.symbols().empty())
    return g;
  try {
    storage = g.bind(b);
  } catch (const Error& e) {
    fail(std::string("binding the symbols of the inputs failed: ") + e.what());
  }
  auto left = storage.symbols();
  if (!left.empty())
    fail("symbol '" + left.front() + "' is not determined by the inputs' shapes");
  return storage;
}

/// The part Get \p node reads, from \p parts (the tuple parts of every node so far).
const Tensor& select_part(const std::vector<std::vector<Tensor>>& all_parts, const Node& node) {
  const auto* attrs = std::get_if<GetAttrs>(&node.attrs);
  if (attrs == nullptr || node.inputs.size() != 1)
    fail("get: takes one operand and GetAttrs");
  const std::vector<Tensor>& parts = all_parts[node.inputs[0].v];
  if (parts.empty())
    fail("get: its operand has no tuple value");
  auto index = attrs->index;
  if (index < 0 || index >= static_cast<std::int64_t>(parts.size()))
    fail("get: part " + std::to_string(index) + " of a tuple value with " +
         std::to_string(parts.size()) + " parts");
  return parts[static_cast<std::size_t>(index)];
}

using LeafValue = std::function<Tensor(NodeId, const Node&)>;

/// Evaluates the nodes of static graph \p g in order, taking leaf values from \p leaf; each value
/// is released after its last use. \returns the outputs (fresh tensors, never aliasing a leaf or
/// each other).
std::vector<Tensor> run_nodes(const Graph& g, const LeafValue& leaf) {
  std::size_t n = g.size();
  std::vector<std::size_t> last_use(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (NodeId in : g.nodes()[i].inputs)
      last_use[in.v] = i;
  std::vector<char> is_output(n, 0);
  for (NodeId o : g.outputs())
    is_output[o.v] = 1;

  std::vector<Tensor> values(n);
  std::vector<std::vector<Tensor>> parts(n); // the parts of tuple-typed nodes
  std::vector<Tensor> args;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = g.nodes()[i];
    NodeId id(static_cast<std::uint32_t>(i));
    try {
      if (node.op == OpKind::Input || node.op == OpKind::Param) {
        values[i] = leaf(id, node);
      } else if (node.op == OpKind::Get) {
        values[i] = select_part(parts, node).clone();
      } else if (node.shape.is_tuple()) {
        args.clear();
        for (NodeId in : node.inputs)
          args.push_back(values[in.v]);
        parts[i] = evaluate_node_parts(node, args);
      } else {
        args.clear();
        for (NodeId in : node.inputs)
          args.push_back(values[in.v]);
        values[i] = evaluate_node(node, args);
      }
    } catch (const Error& e) {
      throw EvalError(describe(g, id) + ": " + e.what());
    }
    for (NodeId in : node.inputs)
      if (last_use[in.v] == i && !is_output[in.v]) {
        values[in.v] = Tensor();
        parts[in.v].clear();
      }
  }
  std::vector<Tensor> outs;
  std::vector<char> handed_out(n, 0);
  for (NodeId o : g.outputs()) {
    bool alias = handed_out[o.v] || is_leaf(g.node(o).op);
    outs.push_back(alias ? values[o.v].clone() : values[o.v]);
    handed_out[o.v] = 1;
  }
  return outs;
}

/// The dispatch, one case per row of ops.def.
Tensor dispatch(const Node& node, const Shape& out, Args args) {
  switch (node.op) {
#define RLX_OP(Name, ...)                                                                          \
  case OpKind::Name:                                                                               \
    return kernels::Name(node, out, args);
#include "rlx/ir/ops.def"
  }
  fail("unknown op kind " + std::to_string(static_cast<int>(node.op)));
}

} // namespace

Bindings bind_inputs(const Graph& g, const TensorMap& inputs, const TensorMap& params) {
  Bindings b;
  SymbolOrigins origins;
  for (bool param : {false, true}) {
    const TensorMap& given = param ? params : inputs;
    const char* kind = param ? "param" : "input";
    for (NodeId id : param ? g.params() : g.inputs()) {
      const auto& name = g.node(id).attr<LeafAttrs>().name;
      auto it = given.find(name);
      if (it == given.end())
        fail(std::string("missing ") + kind + " '" + name + "' of type " + g.shape(id).str());
      match_type(g.shape(id), it->second, std::string(kind) + " '" + name + "'", b, origins);
    }
  }
  for (const auto& [name, value] : inputs)
    if (!g.find_leaf(name).valid()) {
      std::string known;
      for (NodeId id : g.inputs())
        known += (known.empty() ? "'" : ", '") + g.node(id).attr<LeafAttrs>().name + "'";
      fail("unknown input '" + name + "'; the graph's inputs are " +
           (known.empty() ? std::string("none") : known));
    }
  return b;
}

std::vector<Tensor> evaluate(const Graph& g, const TensorMap& inputs, const TensorMap& params) {
  Bindings b = bind_inputs(g, inputs, params);
  Graph storage;
  const Graph& run = bound_graph(g, b, storage);
  return run_nodes(run, [&](NodeId, const Node& node) {
    const auto& name = node.attr<LeafAttrs>().name;
    return node.op == OpKind::Input ? inputs.at(name) : params.at(name);
  });
}

std::vector<Tensor> evaluate_positional(const Graph& g, Args inputs) {
  auto ins = g.inputs();
  if (ins.size() != inputs.size())
    fail("sub-graph '" + g.name() + "' takes " + std::to_string(ins.size()) + " inputs, got " +
         std::to_string(inputs.size()));
  if (!g.params().empty())
    fail("sub-graph '" + g.name() + "' holds params; sub-graphs take every value as an input");
  Bindings b;
  SymbolOrigins origins;
  std::vector<std::size_t> position(g.size(), 0);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    match_type(g.shape(ins[i]), inputs[i], "sub-graph input " + std::to_string(i), b, origins);
    position[ins[i].v] = i;
  }
  Graph storage;
  const Graph& run = bound_graph(g, b, storage);
  return run_nodes(run, [&](NodeId id, const Node&) { return inputs[position[id.v]]; });
}

Tensor evaluate_node(const Node& node, std::span<const Tensor> args) {
  if (node.op == OpKind::Get || node.shape.is_tuple())
    fail(std::string(op_name(node.op)) + ": a tuple-typed node or a get is evaluated with "
                                         "evaluate_node_parts / evaluate, not evaluate_node");
  Shape out = checked_type(node, args);
  if (is_leaf(node.op))
    return dispatch(node, node.shape, args);
  return dispatch(node, out, args);
}

std::vector<Tensor> evaluate_node_parts(const Node& node, std::span<const Tensor> args) {
  if (node.op == OpKind::Get)
    fail("get: it selects a part of its operand's value; evaluate() does that (there is no "
         "tuple value among plain operand tensors)");
  Shape out = checked_type(node, args);
  if (is_leaf(node.op))
    return {dispatch(node, node.shape, args)};
  if (!out.is_tuple())
    return {dispatch(node, out, args)};
  std::vector<Tensor> parts = tuple_kernel(node, out, args);
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (!(parts[i].shape() == out.parts[i]))
      fail(std::string(op_name(node.op)) + ": the kernel gave part " + std::to_string(i) +
           " of type " + parts[i].shape().str() + ", expected " + out.parts[i].str());
  return parts;
}

namespace {

/// Checks \p args against \p node (attribute struct, arity, operand values) and re-derives the
/// node's static type from them; for leaves returns the node's own type.
Shape checked_type(const Node& node, std::span<const Tensor> args) {
  const OpInfo& info = op_info(node.op);
  std::string op(info.name);
  if (node.attrs.index() != info.attrs_index)
    fail(op + ": the node carries the wrong attribute struct");
  auto n = static_cast<int>(args.size());
  if (n < info.min_arity || (info.max_arity >= 0 && n > info.max_arity))
    fail(op + ": " + std::to_string(n) + " operands given, the op takes " +
         std::to_string(info.min_arity) +
         (info.max_arity < 0 ? " or more" : " to " + std::to_string(info.max_arity)));
  if (is_leaf(node.op))
    return node.shape;

  std::vector<Shape> types;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].empty())
      fail(op + ": operand " + std::to_string(i) + " has no value");
    types.push_back(args[i].shape());
  }
  Shape out;
  try {
    out = infer_shape(node.op, types, node.attrs);
  } catch (const Error& e) {
    fail(op + ": the operands do not fit the op: " + e.what());
  }
  if (!out.is_static())
    fail(op + ": the result type " + out.str() + " is not static; bind its symbols first");
  bool fits = node.shape.is_static()
                  ? node.shape == out
                  : node.shape.dtype == out.dtype && node.shape.rank() == out.rank();
  if (!fits)
    fail(op + ": the operands give type " + out.str() + " but the node's type is " +
         node.shape.str());
  return out;
}

} // namespace

} // namespace rlx::ir::reference
