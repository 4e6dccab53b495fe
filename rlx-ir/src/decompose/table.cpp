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
  add_backward_decompositions(t);
  add_fused_norm_decompositions(t);
  add_fused_attention_decompositions(t);
  add_conv_backward_decompositions(t);
  add_fused_layer_decompositions(t);
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

std::vector<NodeId> emit_decomposition(const Decomposition& form, Builder& b, NodeId id,
                                       const DecomposeOptions& opts, std::string& why) {
  try {
    if (form.parts != nullptr)
      return form.parts(b, id, opts, why);
    const NodeId r = form.fn(b, id, opts, why);
    if (r.valid())
      return {r};
  } catch (const ShapeError& e) {
    why = e.what();
  }
  return {};
}

std::vector<NodeId> decompose_values(Builder& b, NodeId id, const DecomposeOptions& opts,
                                     std::string& why) {
  const auto forms = decompositions(b.graph().node(id).op);
  if (forms.empty()) {
    why = "no decomposition into other ops";
    return {};
  }
  std::string reasons;
  for (const Decomposition& d : forms) {
    std::string reason;
    std::vector<NodeId> r = emit_decomposition(d, b, id, opts, reason);
    if (!r.empty())
      return r;
    reasons += (reasons.empty() ? "" : "; ") + reason;
  }
  why = reasons;
  return {};
}

void replace_by_values(Graph& g, NodeId id, std::span<const NodeId> values) {
  if (!g.node(id).shape.is_tuple()) {
    if (values.size() != 1)
      throw Error("replace_by_values: " + describe(g, id) + " has one result, given " +
                  std::to_string(values.size()) + " values");
    g.replace_all_uses(id, values[0]);
    return;
  }
  if (values.size() != g.node(id).shape.parts.size())
    throw Error("replace_by_values: " + describe(g, id) + " has " +
                std::to_string(g.node(id).shape.parts.size()) + " parts, given " +
                std::to_string(values.size()) + " values");
  const std::vector<NodeId> users(g.users(id).begin(), g.users(id).end());
  for (NodeId u : users) {
    if (g.node(u).op != OpKind::Get)
      throw Error("replace_by_values: " + describe(g, u) + " reads the tuple " + describe(g, id) +
                  " but is no get");
    const auto part = static_cast<std::size_t>(g.node(u).attr<GetAttrs>().index);
    g.replace_all_uses(u, values[part]);
  }
}

NodeId decompose(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why) {
  const OpKind k = b.graph().node(id).op;
  const auto forms = decompositions(k);
  if (forms.empty()) {
    why = "no decomposition into other ops";
    return {};
  }
  if (b.graph().node(id).shape.is_tuple()) {
    why = "its result is a tuple; use decompose_values";
    return {};
  }
  std::string reasons;
  for (const Decomposition& d : forms) {
    std::string reason;
    std::vector<NodeId> r = emit_decomposition(d, b, id, opts, reason);
    if (r.size() == 1)
      return r[0];
    reasons += (reasons.empty() ? "" : "; ") + reason;
  }
  why = reasons;
  return {};
}

} // namespace rlx::ir
