// table.cpp: the registration point of the decomposition table, and its public lookups.
#include "families.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir {

namespace decompose_detail {

void DecompositionTable::set(OpKind k, std::initializer_list<Decomposition> forms) {
  auto& slot = forms_[static_cast<std::size_t>(k)];
  if (!slot.empty())
    throw Error("decompositions: " + std::string(op_name(k)) + " is registered twice (first form " +
                std::string(slot.front().name) + ")");
  slot.assign(forms.begin(), forms.end());
}

NodeId scalar_like(Builder& b, NodeId like, double v) {
  return b.scalar(v, b.shape(like).dtype);
}

Node node_copy(Builder& b, NodeId id) {
  return b.graph().node(id);
}

bool float_node(Builder& b, NodeId id, std::string& why) {
  if (is_float(b.shape(id).dtype))
    return true;
  why = "defined for float types only, not " + std::string(dtype_name(b.shape(id).dtype));
  return false;
}

namespace {

DecompositionTable make_table() {
  DecompositionTable t;
  add_elementwise_decompositions(t);
  add_normalization_decompositions(t);
  add_attention_decompositions(t);
  add_movement_decompositions(t);
  add_quantization_decompositions(t);
  add_linalg_decompositions(t);
  add_control_flow_decompositions(t);
  add_fused_decompositions(t);
  add_fused_transformer_decompositions(t);
  add_region_decompositions(t);
  add_fused_norm_decompositions(t);
  return t;
}

} // namespace

} // namespace decompose_detail

NodeId full_constant(Builder& b, const Shape& type, double v) {
  Tensor t(type);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, v);
  return b.constant(std::move(t));
}

std::span<const Decomposition> decompositions(OpKind k) {
  static const decompose_detail::DecompositionTable table = decompose_detail::make_table();
  return table.get(k);
}

bool has_decomposition(OpKind k) {
  return !decompositions(k).empty();
}

NodeId decompose(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why) {
  const OpKind k = b.graph().node(id).op;
  const auto forms = decompositions(k);
  if (forms.empty()) {
    why = "no decomposition into other ops";
    return {};
  }
  if (b.graph().shape(id).is_tuple()) {
    why = std::string(op_name(k)) + " has a tuple result: expand it with decompose_parts";
    return {};
  }
  std::string reasons;
  for (const Decomposition& d : forms) {
    std::string reason;
    NodeId r;
    if (d.fn == nullptr)
      continue;
    try {
      r = d.fn(b, id, opts, reason);
    } catch (const ShapeError& e) {
      reason = e.what();
    }
    if (r.valid())
      return r;
    reasons += (reasons.empty() ? "" : "; ") + reason;
  }
  why = reasons;
  return {};
}

std::vector<NodeId> decompose_parts(Builder& b, NodeId id, const DecomposeOptions& opts,
                                    std::string& why) {
  if (!b.graph().shape(id).is_tuple()) {
    const NodeId r = decompose(b, id, opts, why);
    return r.valid() ? std::vector<NodeId>{r} : std::vector<NodeId>{};
  }
  const OpKind k = b.graph().node(id).op;
  std::string reasons;
  for (const Decomposition& d : decompositions(k)) {
    if (d.parts == nullptr)
      continue;
    std::string reason;
    std::vector<NodeId> r;
    try {
      r = d.parts(b, id, opts, reason);
    } catch (const ShapeError& e) {
      reason = e.what();
    }
    if (!r.empty())
      return r;
    reasons += (reasons.empty() ? "" : "; ") + reason;
  }
  why = reasons.empty() ? "no decomposition of its tuple result into other ops" : reasons;
  return {};
}

void replace_tuple_uses(Graph& g, NodeId id, std::span<const NodeId> parts) {
  const Shape& t = g.shape(id);
  if (!t.is_tuple()) {
    if (parts.size() != 1)
      throw Error("replace_tuple_uses: " + describe(g, id) + " has one result, not " +
                  std::to_string(parts.size()));
    g.replace_all_uses(id, parts[0]);
    return;
  }
  if (parts.size() != t.parts.size())
    throw Error("replace_tuple_uses: " + describe(g, id) + " has " +
                std::to_string(t.parts.size()) + " parts, the decomposition " +
                std::to_string(parts.size()));
  // Copy the user list first: replacing edits it.
  const std::vector<NodeId> users(g.users(id).begin(), g.users(id).end());
  for (NodeId u : users) {
    const Node& n = g.node(u);
    if (n.op != OpKind::Get)
      throw Error("replace_tuple_uses: " + describe(g, u) + " reads the tuple " + describe(g, id) +
                  " without get");
    const auto index = static_cast<std::size_t>(n.attr<GetAttrs>().index);
    if (g.use_count(u) > 0)
      g.replace_all_uses(u, parts[index]);
  }
}

} // namespace rlx::ir
