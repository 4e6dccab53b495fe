// graph.cpp: Graph mutation, use lists, compaction, binding and structural hashing.
#include "rlx/ir/graph.hpp"

#include "attr_visit.hpp"
#include "rlx/ir/effects.hpp"
#include "rlx/ir/error.hpp"
#include "shape_rules.hpp"
#include "tuple_type.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace rlx::ir {

Shape infer_shape(OpKind op, std::span<const Shape> in, const Attrs& attrs) {
  const OpInfo& info = op_info(op);
  if (attrs.index() != info.attrs_index)
    throw ShapeError(std::string(info.name) + ": wrong attribute type for this op");
  auto n = static_cast<int>(in.size());
  if (n < info.min_arity || (info.max_arity >= 0 && n > info.max_arity)) {
    std::string want = info.max_arity == info.min_arity ? std::to_string(info.min_arity)
                       : info.max_arity < 0 ? "at least " + std::to_string(info.min_arity)
                                            : std::to_string(info.min_arity) + " to " +
                                                  std::to_string(info.max_arity);
    throw ShapeError(std::string(info.name) + ": takes " + want + " inputs, got " +
                     std::to_string(n));
  }
  check_tuple_operands(op, in);
  switch (op) {
#define RLX_OP(Name, mnemonic, min_arity, max_arity, AttrsT, rule, ...)                            \
  case OpKind::Name:                                                                               \
    return rules::rule(in, std::get<AttrsT>(attrs));
#include "rlx/ir/ops.def"
  }
  throw ShapeError("unknown op kind");
}

std::string describe(const Graph& g, NodeId id) {
  if (!id.valid() || id.v >= g.size())
    return "%" + (id.valid() ? std::to_string(id.v) : std::string("?"));
  const Node& n = g.node(id);
  std::string s = std::string(op_name(n.op)) + " %" + std::to_string(id.v);
  if (const auto* leaf = std::get_if<LeafAttrs>(&n.attrs))
    s += " '" + leaf->name + "'";
  else if (!n.name.empty())
    s += " '" + n.name + "'";
  return s;
}

void Graph::check_id(NodeId id, const char* what) const {
  if (!id.valid() || id.v >= nodes_.size())
    throw ShapeError(std::string(what) + ": node id %" +
                     (id.valid() ? std::to_string(id.v) : std::string("<invalid>")) +
                     " does not exist (graph has " + std::to_string(nodes_.size()) + " nodes)");
}

NodeId Graph::add(OpKind op, std::vector<NodeId> inputs, Attrs attrs, std::string name) {
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  for (NodeId in : inputs) {
    check_id(in, op_name(op).data());
    shapes.push_back(nodes_[in.v].shape);
  }
  Shape out;
  try {
    out = infer_shape(op, shapes, attrs);
  } catch (const ShapeError& e) {
    std::string where = std::string(op_name(op)) + " (new node %" + std::to_string(nodes_.size());
    if (!name.empty())
      where += " '" + name + "'";
    where += ")";
    for (std::size_t i = 0; i < inputs.size(); ++i)
      where += (i ? ", " : " on ") + shapes[i].str();
    throw ShapeError(where + ": " + e.what());
  }
  return add_unchecked(
      Node{op, std::move(inputs), std::move(attrs), std::move(out), std::move(name)});
}

NodeId Graph::add_unchecked(Node node) {
  NodeId id(static_cast<std::uint32_t>(nodes_.size()));
  for (NodeId in : node.inputs)
    check_id(in, "add");
  for (NodeId in : node.inputs)
    users_[in.v].push_back(id);
  if (node.op == OpKind::Input || node.op == OpKind::Param)
    if (const auto* leaf = std::get_if<LeafAttrs>(&node.attrs))
      leaves_[node.op == OpKind::Param ? 1 : 0].emplace(leaf->name, id);
  nodes_.push_back(std::move(node));
  users_.emplace_back();
  output_uses_.push_back(0);
  return id;
}

const Node& Graph::node(NodeId id) const {
  check_id(id, "node");
  return nodes_[id.v];
}

std::vector<NodeId> Graph::ids() const {
  std::vector<NodeId> out(nodes_.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = NodeId(static_cast<std::uint32_t>(i));
  return out;
}

void Graph::set_outputs(std::vector<NodeId> outs) {
  for (NodeId o : outs)
    check_id(o, "set_outputs");
  std::fill(output_uses_.begin(), output_uses_.end(), 0);
  outputs_ = std::move(outs);
  for (NodeId o : outputs_)
    ++output_uses_[o.v];
}

void Graph::add_alias(std::size_t output, std::string param) {
  if (output > UINT32_MAX)
    throw Error("add_alias: output index " + std::to_string(output) + " is out of range");
  aliases_.push_back({static_cast<std::uint32_t>(output), std::move(param)});
}

void Graph::add_output(NodeId id) {
  check_id(id, "add_output");
  outputs_.push_back(id);
  ++output_uses_[id.v];
}

std::span<const NodeId> Graph::users(NodeId id) const {
  check_id(id, "users");
  return users_[id.v];
}

int Graph::output_uses(NodeId id) const {
  check_id(id, "output_uses");
  return output_uses_[id.v];
}

int Graph::use_count(NodeId id) const {
  check_id(id, "use_count");
  return static_cast<int>(users_[id.v].size()) + output_uses_[id.v];
}

std::vector<NodeId> Graph::inputs() const {
  std::vector<NodeId> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == OpKind::Input)
      out.emplace_back(static_cast<std::uint32_t>(i));
  return out;
}

std::vector<NodeId> Graph::params() const {
  std::vector<NodeId> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == OpKind::Param)
      out.emplace_back(static_cast<std::uint32_t>(i));
  return out;
}

NodeId Graph::find_leaf(std::string_view name, bool param) const {
  const auto& index = leaves_[param ? 1 : 0];
  auto it = index.find(std::string(name));
  return it == index.end() ? NodeId{} : it->second;
}

void Graph::replace_all_uses(NodeId from, NodeId to) {
  check_id(from, "replace_all_uses");
  check_id(to, "replace_all_uses");
  if (from == to)
    return;
  if (!(nodes_[from.v].shape == nodes_[to.v].shape))
    throw ShapeError("replace_all_uses: " + describe(*this, from) + " has type " +
                     nodes_[from.v].shape.str() + " but " + describe(*this, to) + " has " +
                     nodes_[to.v].shape.str());
  for (NodeId u : users_[from.v]) {
    for (NodeId& in : nodes_[u.v].inputs)
      if (in == from) {
        in = to;
        users_[to.v].push_back(u);
        break; // one use-list entry per slot: replace one slot per entry
      }
  }
  users_[from.v].clear();
  for (NodeId& o : outputs_)
    if (o == from)
      o = to;
  output_uses_[to.v] += output_uses_[from.v];
  output_uses_[from.v] = 0;
}

void Graph::set_input(NodeId user, std::size_t slot, NodeId value) {
  check_id(user, "set_input");
  check_id(value, "set_input");
  Node& n = nodes_[user.v];
  if (slot >= n.inputs.size())
    throw ShapeError("set_input: " + describe(*this, user) + " has no operand " +
                     std::to_string(slot));
  NodeId old = n.inputs[slot];
  if (!(nodes_[old.v].shape == nodes_[value.v].shape))
    throw ShapeError("set_input: operand type " + nodes_[old.v].shape.str() + " replaced by " +
                     nodes_[value.v].shape.str());
  auto& ou = users_[old.v];
  ou.erase(std::find(ou.begin(), ou.end(), user));
  n.inputs[slot] = value;
  users_[value.v].push_back(user);
}

std::vector<NodeId> Graph::compact() {
  const std::size_t n = nodes_.size();
  std::vector<char> live(n, 0);
  std::vector<NodeId> stack;
  for (std::size_t i = 0; i < n; ++i)
    if (nodes_[i].op == OpKind::Input || nodes_[i].op == OpKind::Param)
      live[i] = 1;
  for (NodeId o : outputs_)
    stack.push_back(o);
  for (std::size_t i = 0; i < n; ++i)
    if (has_effects(nodes_[i])) // kept without users, like an output (effects.hpp)
      stack.emplace_back(static_cast<std::uint32_t>(i));
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (live[id.v] == 2)
      continue;
    live[id.v] = 2;
    for (NodeId in : nodes_[id.v].inputs)
      stack.push_back(in);
  }
  // Stable post-order DFS: visits roots in list order, emits a node after its operands.
  std::vector<NodeId> order;
  order.reserve(n);
  std::vector<char> state(n, 0); // 0 new, 1 on stack, 2 done
  std::vector<std::pair<NodeId, std::size_t>> dfs;
  for (std::size_t r = 0; r < n; ++r) {
    if (!live[r] || state[r])
      continue;
    dfs.emplace_back(NodeId(static_cast<std::uint32_t>(r)), 0);
    state[r] = 1;
    while (!dfs.empty()) {
      auto& [id, next] = dfs.back();
      const auto& ins = nodes_[id.v].inputs;
      if (next < ins.size()) {
        NodeId in = ins[next++];
        if (state[in.v] == 1)
          throw VerifyError("graph has a cycle through " + describe(*this, in));
        if (state[in.v] == 0) {
          state[in.v] = 1;
          dfs.emplace_back(in, 0);
        }
      } else {
        state[id.v] = 2;
        order.push_back(id);
        dfs.pop_back();
      }
    }
  }
  std::vector<NodeId> remap(n);
  for (std::size_t i = 0; i < order.size(); ++i)
    remap[order[i].v] = NodeId(static_cast<std::uint32_t>(i));
  std::vector<Node> old = std::move(nodes_);
  std::vector<NodeId> outs = std::move(outputs_);
  nodes_.clear();
  users_.clear();
  output_uses_.clear();
  outputs_.clear();
  leaves_[0].clear();
  leaves_[1].clear();
  for (NodeId id : order) {
    Node nd = std::move(old[id.v]);
    for (NodeId& in : nd.inputs)
      in = remap[in.v];
    add_unchecked(std::move(nd));
  }
  for (NodeId& o : outs)
    o = remap[o.v];
  set_outputs(std::move(outs));
  return remap;
}

std::vector<std::string> Graph::symbols() const {
  std::vector<std::string> out;
  for (const auto& nd : nodes_)
    nd.shape.collect_symbols(out);
  return out;
}

namespace {
void bind_attrs(Attrs& attrs, const Bindings& b) {
  detail::visit_attr_fields(attrs, [&](std::string_view, auto& f) {
    using F = std::decay_t<decltype(f)>;
    if constexpr (std::is_same_v<F, Shape>) {
      f = f.bind(b);
    } else if constexpr (std::is_same_v<F, std::vector<Dim>>) {
      for (auto& d : f)
        if (d.is_symbolic())
          if (auto it = b.find(d.symbol()); it != b.end())
            d = Dim(it->second);
    } else if constexpr (std::is_same_v<F, SubGraph>) {
      if (f)
        f.graph = std::make_shared<const Graph>(f->bind(b));
    }
  });
}
} // namespace

Graph Graph::bind(const Bindings& b) const {
  Graph out(name_);
  for (const auto& nd : nodes_) {
    Attrs a = nd.attrs;
    bind_attrs(a, b);
    out.add(nd.op, nd.inputs, std::move(a), nd.name);
  }
  out.set_outputs(outputs_);
  out.aliases_ = aliases_;
  return out;
}

// ---- structural hash and equality
// ----------------------------------------------------------------

namespace {
struct Hasher {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void mix(std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 0x100000001b3ull;
    }
  }
  void str(std::string_view s) {
    mix(s.size());
    bytes(s.data(), s.size());
  }
  void shape(const Shape& s) {
    if (s.is_tuple()) { // tensor types hash as they always did
      mix(s.parts.size());
      for (const auto& p : s.parts)
        shape(p);
    }
    mix(static_cast<std::uint64_t>(s.dtype));
    mix(s.dims.size());
    for (const auto& d : s.dims) {
      if (d.is_symbolic())
        str(d.symbol());
      else
        mix(static_cast<std::uint64_t>(d.size()));
    }
  }
  template <class F> void field(const F& f) {
    if constexpr (std::is_same_v<F, bool> || std::is_same_v<F, std::int64_t> || std::is_enum_v<F>) {
      mix(static_cast<std::uint64_t>(f));
    } else if constexpr (std::is_same_v<F, double>) {
      mix(std::bit_cast<std::uint64_t>(f));
    } else if constexpr (std::is_same_v<F, std::string>) {
      str(f);
    } else if constexpr (std::is_same_v<F, Shape>) {
      shape(f);
    } else if constexpr (std::is_same_v<F, Dim>) {
      shape(Shape({f}, DType::f32));
    } else if constexpr (std::is_same_v<F, Tensor>) {
      shape(f.shape());
      bytes(f.raw(), f.nbytes());
    } else if constexpr (std::is_same_v<F, SubGraph>) {
      mix(f ? f->hash() : 0);
    } else if constexpr (detail::is_optional<F>::value) {
      mix(f.has_value());
      if (f)
        field(*f);
    } else if constexpr (detail::is_vector<F>::value) {
      mix(f.size());
      for (const auto& e : f)
        field(e);
    } else {
      static_assert(sizeof(F) == 0, "unhandled attribute field type");
    }
  }
};
} // namespace

std::uint64_t Graph::hash() const {
  Hasher hs;
  hs.mix(nodes_.size());
  for (const auto& nd : nodes_) {
    hs.mix(static_cast<std::uint64_t>(nd.op));
    hs.mix(nd.inputs.size());
    for (NodeId in : nd.inputs)
      hs.mix(in.v);
    hs.shape(nd.shape);
    detail::visit_attr_fields(nd.attrs, [&](std::string_view, const auto& f) { hs.field(f); });
  }
  hs.mix(outputs_.size());
  for (NodeId o : outputs_)
    hs.mix(o.v);
  hs.mix(aliases_.size());
  for (const OutputAlias& a : aliases_) {
    hs.mix(a.output);
    hs.str(a.param);
  }
  return hs.h;
}

bool operator==(const Graph& a, const Graph& b) {
  if (a.nodes_.size() != b.nodes_.size() || a.outputs_ != b.outputs_ || a.aliases_ != b.aliases_)
    return false;
  for (std::size_t i = 0; i < a.nodes_.size(); ++i) {
    const Node& x = a.nodes_[i];
    const Node& y = b.nodes_[i];
    if (x.op != y.op || x.inputs != y.inputs || !(x.shape == y.shape) || !(x.attrs == y.attrs))
      return false;
  }
  return true;
}

bool operator==(const SubGraph& a, const SubGraph& b) {
  if (!a || !b)
    return !a && !b;
  return a.graph == b.graph || *a.graph == *b.graph;
}

} // namespace rlx::ir
