// graph.hpp: Graph, Node and NodeId.
#pragma once

#include "rlx/ir/attrs.hpp"
#include "rlx/ir/op.hpp"
#include "rlx/ir/shape.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace rlx::ir {

/// Index of a node in its graph's node list (printed %n). Ids are dense; compact() renumbers.
struct NodeId {
  std::uint32_t v = UINT32_MAX;
  constexpr NodeId() = default;
  constexpr explicit NodeId(std::uint32_t i) : v(i) {}
  constexpr bool valid() const { return v != UINT32_MAX; }
  friend constexpr auto operator<=>(NodeId, NodeId) = default;
};

/// One operation with exactly one output of type \p shape.
struct Node {
  OpKind op;
  std::vector<NodeId> inputs;
  Attrs attrs;
  Shape shape;
  std::string name; ///< optional debug label (Input / Param interface names live in LeafAttrs)

  /// The node's attribute struct; throws (std::bad_variant_access) when \p A is not its type.
  template <class A> const A& attr() const { return std::get<A>(attrs); }
};

/// A graph output that updates a Param in place (XLA's input/output aliasing): the value of output
/// \p output becomes the Param named \p param's new value, written into the Param's own buffer.
/// The memory planner gives the output no buffer of its own (Storage::aliased), so a training
/// step updates its weights where they live, with no allocation and no copy.
struct OutputAlias {
  std::uint32_t output = 0; ///< index into Graph::outputs()
  std::string param;        ///< interface name of the updated Param
  friend bool operator==(const OutputAlias&, const OutputAlias&) = default;
};

/// A tensor DAG. Invariants (checked by verify()): every input id is smaller than the node's own id
/// (the node list is a topological order), arity and attributes match ops.def, and every shape is
/// what the op's shape rule derives. Use lists are maintained incrementally and count graph
/// outputs: a node that is an output is never dead.
class Graph {
public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  /// Appends a node: checks arity, the attribute type and input ids, then infers its shape with the
  /// op's shape rule. Throws ShapeError naming the op, the new node and the reason.
  NodeId add(OpKind op, std::vector<NodeId> inputs, Attrs attrs, std::string name = {});
  /// Appends a node with an explicitly given shape, checking nothing but id ranges. For parsers and
  /// tests that must build invalid graphs; verify() is the judge of what this produces.
  NodeId add_unchecked(Node node);

  std::size_t size() const { return nodes_.size(); }
  const Node& node(NodeId id) const;
  const Node& operator[](NodeId id) const { return node(id); }
  std::span<const Node> nodes() const { return nodes_; }
  const Shape& shape(NodeId id) const { return node(id).shape; }
  /// Every node id in list order.
  std::vector<NodeId> ids() const;

  /// Graph outputs, in order (a node may appear more than once).
  std::span<const NodeId> outputs() const { return outputs_; }
  void set_outputs(std::vector<NodeId> outs);
  void add_output(NodeId id);

  /// The in-place updates: output index -> Param name (see OutputAlias), in the order added.
  /// Checked by verify(): the output exists, the Param exists with the output's type, each output
  /// and each Param appears once. Rewrites that renumber nodes keep them (they name an output
  /// index and a Param name, not node ids).
  std::span<const OutputAlias> aliases() const { return aliases_; }
  /// Replaces the alias list.
  void set_aliases(std::vector<OutputAlias> aliases) { aliases_ = std::move(aliases); }
  /// Declares that output \p output updates Param \p param in place.
  void add_alias(std::size_t output, std::string param);

  /// Nodes reading \p id, once per operand slot, in no particular order.
  std::span<const NodeId> users(NodeId id) const;
  /// How many times \p id is a graph output.
  int output_uses(NodeId id) const;
  /// Operand uses plus output uses: 0 means dead.
  int use_count(NodeId id) const;
  bool is_output(NodeId id) const { return output_uses(id) > 0; }

  /// Input nodes in list order.
  std::vector<NodeId> inputs() const;
  /// Param nodes in list order.
  std::vector<NodeId> params() const;
  /// The Input (or Param with \p param) named \p name, or an invalid id. A hash lookup (the index
  /// is kept with the node list), so building a graph of n leaves is linear. When names repeat
  /// (only add_unchecked allows it) the first in list order is returned.
  NodeId find_leaf(std::string_view name, bool param = false) const;

  /// Rewires every use of \p from (operands and outputs) to \p to. Types must match. The list may
  /// leave topological order (when \p to is newer than a user): call compact() before verifying.
  void replace_all_uses(NodeId from, NodeId to);
  /// Sets operand \p slot of \p user to \p value (same type as before).
  void set_input(NodeId user, std::size_t slot, NodeId value);
  /// Restores topological order (stable) and removes dead nodes other than Inputs, Params and
  /// nodes with effects (has_effects in effects.hpp).
  /// \returns old id → new id (invalid for removed nodes). Throws VerifyError on a cycle.
  std::vector<NodeId> compact();

  /// Symbol names used by any node's shape, in first-use order.
  std::vector<std::string> symbols() const;
  /// A copy with symbols bound to sizes; every shape is re-derived (Reshape / Expand targets and
  /// leaf types are bound too).
  Graph bind(const Bindings& b) const;

  /// A structural hash: ops, attributes, edges, shapes, outputs and aliases (node names excluded).
  std::uint64_t hash() const;
  /// Structural equality with the same scope as hash().
  friend bool operator==(const Graph& a, const Graph& b);

private:
  void check_id(NodeId id, const char* what) const;
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<NodeId> outputs_;
  std::vector<OutputAlias> aliases_;
  std::vector<std::vector<NodeId>> users_;
  std::vector<int> output_uses_;
  /// Leaf name → first node of that name: [0] Inputs, [1] Params.
  std::unordered_map<std::string, NodeId> leaves_[2];
};

/// Infers the output type of \p op on operand types \p inputs with attributes \p attrs (the op's
/// shape rule from ops.def). Throws ShapeError with the reason.
Shape infer_shape(OpKind op, std::span<const Shape> inputs, const Attrs& attrs);

/// Names a node for messages: "matmul %3 'q_proj'".
std::string describe(const Graph& g, NodeId id);

} // namespace rlx::ir

template <> struct std::hash<rlx::ir::NodeId> {
  std::size_t operator()(rlx::ir::NodeId id) const noexcept { return id.v; }
};
