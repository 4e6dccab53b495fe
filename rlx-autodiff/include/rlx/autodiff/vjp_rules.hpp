// vjp_rules.hpp: the VJP rule table, one rule per differentiable op of ops.def.
//
// Rules are grouped by op family in src/vjp_*.cpp; src/vjp_table.cpp assembles the table by
// explicit calls (no static registries). The completeness test iterates ops.def: every op marked
// kDifferentiable has a rule here, except leaves (nothing to propagate) and HIR blocks (lowered
// by prepare_graph_for_ad before the walk).
#pragma once

#include "rlx/ir/builder.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace rlx::autodiff {

/// What a rule sees: the forward node (a copy: the graph grows while the rule emits), its value
/// and operands in the gradient graph, the upstream gradient, and which operands need a gradient.
struct VjpContext {
  ir::Builder& b;
  ir::Node node;                    ///< the forward node (copy)
  ir::NodeId self;                  ///< its value (forward values are reused, not recomputed)
  std::vector<ir::NodeId> in;       ///< its operands
  ir::NodeId up;                    ///< d loss / d self, of self's type (invalid for tuples)
  std::vector<ir::NodeId> part_ups; ///< tuple-typed nodes: one upstream per part (or invalid)
  std::vector<bool> needs;          ///< needs[i]: operand i wants a gradient
  /// Emits the op's decomposition into primitives (through \p emit, which reads the operands
  /// \p in and returns the value equal to self) and differentiates it with the table's rules:
  /// \returns one gradient per operand (invalid where none). Used by "via decomposition" rules.
  std::function<std::vector<ir::NodeId>(
      const std::function<ir::NodeId(ir::Builder&, std::span<const ir::NodeId>)>& emit)>
      decompose;
};

/// A rule: \returns one gradient per operand, of that operand's type, or an invalid id where the
/// operand gets no gradient (not needed, integer, or declared non-differentiable).
using VjpFn = std::vector<ir::NodeId> (*)(VjpContext&);

/// One row of the table.
struct VjpRule {
  VjpFn fn = nullptr;
  /// Bit i set: operand i never gets a gradient (indices, labels, masks, predicates), declared
  /// here rather than guessed from its dtype.
  std::uint32_t non_differentiable = 0;
  /// Per-node declaration for ops whose non-differentiable operands depend on attributes
  /// (Attention's 4th operand is a padding mask or an additive bias); ORed with the bits above.
  std::uint32_t (*non_differentiable_of)(const ir::Node&) = nullptr;
  /// The rule differentiates the op's decomposition into primitives (VjpContext::decompose)
  /// rather than a closed form.
  bool via_decomposition = false;
};

/// The rule of \p op, or nullptr when the table has none.
const VjpRule* vjp_rule(ir::OpKind op);

/// Bit i set: operand i of \p node never gets a gradient, as its rule declares (0 for an op
/// without a rule).
std::uint32_t non_differentiable_operands(const ir::Node& node);

} // namespace rlx::autodiff
