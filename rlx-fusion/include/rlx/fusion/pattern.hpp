// pattern.hpp: the declarative pattern-rewrite helper that fusion passes (and simplify) use.
//
// A Pattern is a tree of node patterns (Pat) rooted at one op kind, a set of constraints, and a
// rewrite that builds the replacement of the root. Matching has two layers:
//
//  * structure: op kinds, operand patterns, Constant splat values, "same node as captured X".
//    Operand patterns of commutative binary ops (ops.def kCommutative) are tried in both orders,
//    with full backtracking, so a pattern is written once;
//  * constraints: single consumer, dtype, rank / shape predicates, attribute predicates, the
//    pattern's whole-match check and the backend's claim on the ops the rewrite emits.
//
// A node whose structure matches but whose constraints fail is a *recognisable* pattern that did
// not apply: apply_patterns() records it in the FusionReport with the MissReason of the first
// failing constraint. A structural mismatch is simply not this pattern and is not recorded.
//
// apply_patterns() is the driver: it indexes patterns by root op, sweeps the graph in order, tries
// the patterns of each live node by decreasing benefit, replaces the root with the rewrite's node
// (Graph::replace_all_uses), compacts after every sweep that changed something, and repeats until a
// sweep changes nothing. All graph mutation goes through it, so use lists stay correct.
#pragma once

#include "rlx/fusion/io_gate.hpp"
#include "rlx/fusion/pass.hpp"
#include "rlx/fusion/report.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/graph.hpp"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlx::fusion {

/// Why a constraint refused a structurally matching pattern.
struct Miss {
  MissReason reason;
  std::string detail; ///< one line naming the node and what was wrong
};

/// The nodes a match bound, by capture name; root is the matched root node.
class Match {
public:
  ir::NodeId root;
  /// The node captured as \p name; throws Error when there is none.
  ir::NodeId operator[](std::string_view name) const;
  /// Whether \p name was captured.
  bool has(std::string_view name) const;
  /// Captures \p id as \p name (used by the matcher).
  void bind(std::string name, ir::NodeId id) { caps_.emplace_back(std::move(name), id); }
  /// Drops captures made after the first \p n (backtracking).
  void truncate(std::size_t n) { caps_.resize(n); }
  /// The number of captures.
  std::size_t size() const { return caps_.size(); }

private:
  std::vector<std::pair<std::string, ir::NodeId>> caps_;
};

/// A node predicate used by constraints.
using NodePredicate = std::function<bool(const ir::Graph&, ir::NodeId)>;

/// A pattern for one node: structure (op kind, operands, splat value, same-as-captured) plus
/// constraints. Build with the static constructors, then chain the modifiers.
class Pat {
public:
  /// Any node.
  static Pat any();
  /// A node of kind \p k whose operands match \p operands in order (tried in both orders when \p k
  /// is commutative). An empty list leaves the operands unconstrained.
  static Pat op(ir::OpKind k, std::vector<Pat> operands = {});
  /// A Constant every element of which equals \p value (compared as double).
  static Pat splat(double value);
  /// The node captured as \p name earlier in the same match.
  static Pat same(std::string name);

  /// Captures the matched node as \p name.
  Pat& bind(std::string name);
  /// Structural predicate: when \p pred fails the node is not this pattern (nothing is recorded).
  Pat& structurally(NodePredicate pred);
  /// Constraint: the node has exactly one use, counting graph outputs (MissReason
  /// multiple_consumers, or is_graph_output when the other use is an output).
  Pat& one_use();
  /// Constraint: the node's dtype is \p t (dtype_mismatch).
  Pat& dtype(ir::DType t);
  /// Constraint: the node's dtype is a float type (dtype_mismatch).
  Pat& float_dtype();
  /// Constraint: the node has rank \p r (shape_mismatch).
  Pat& rank(std::size_t r);
  /// Constraint: \p pred holds, otherwise the match is recorded as a miss with \p reason and
  /// \p detail (the node's description is prepended).
  Pat& where(NodePredicate pred, MissReason reason, std::string detail);
  /// Constraint on the node's attribute struct \p A (attribute_mismatch).
  template <class A> Pat& attr(std::function<bool(const A&)> pred, std::string detail) {
    return where(
        [pred = std::move(pred)](const ir::Graph& g, ir::NodeId id) {
          const auto* a = std::get_if<A>(&g.node(id).attrs);
          return a && pred(*a);
        },
        MissReason::attribute_mismatch, std::move(detail));
  }

  // Read access for the matcher.

  /// What a Pat matches structurally.
  enum class Kind : std::uint8_t { any, op, splat, same };
  /// One constraint: a predicate and the miss it reports when it fails.
  struct Constraint {
    NodePredicate pred;   ///< null for the single-consumer constraint
    MissReason reason;    ///< reported when \p pred fails
    std::string detail;   ///< one line appended to the node's description
    bool one_use = false; ///< the special single-consumer constraint
  };
  /// The structural kind.
  Kind kind() const { return kind_; }
  /// The op kind of an op pattern.
  ir::OpKind op_kind() const { return op_; }
  /// The operand patterns of an op pattern (empty = unconstrained).
  const std::vector<Pat>& operands() const { return operands_; }
  /// The value of a splat pattern.
  double splat_value() const { return splat_; }
  /// The capture name ("" = not captured).
  const std::string& capture() const { return capture_; }
  /// The capture a same pattern refers to.
  const std::string& same_as() const { return same_; }
  /// The structural predicates.
  const std::vector<NodePredicate>& structural() const { return structural_; }
  /// The constraints, in the order they were added.
  const std::vector<Constraint>& constraints() const { return constraints_; }

private:
  Kind kind_ = Kind::any;
  ir::OpKind op_ = ir::OpKind::Input;
  std::vector<Pat> operands_;
  double splat_ = 0;
  std::string capture_;
  std::string same_;
  std::vector<NodePredicate> structural_;
  std::vector<Constraint> constraints_;
};

/// A rewrite rule: a root pattern (an op pattern), constraints and the replacement.
struct Pattern {
  std::string name; ///< reported in the FusionReport ("matmul_bias_act")
  Pat root;         ///< must be a Pat::op
  int benefit = 1;  ///< patterns of one root op are tried by decreasing benefit
  /// Whole-match constraint (e.g. two captures have equal shapes); return a Miss to refuse.
  std::function<std::optional<Miss>(const ir::Graph&, const Match&)> check;
  /// Op kinds the rewrite emits; each must be claimed (for the root's dtype) by the context's
  /// claim set, otherwise the match is a miss with MissReason not_claimed.
  std::vector<ir::OpKind> emits;
  /// Builds the replacement of match.root with \p b and \returns it; it must have the root's type.
  std::function<ir::NodeId(ir::Builder& b, const Match& m)> rewrite;
  /// Whether the IO fusion-benefit gate (ApplyOptions::gate) judges this rewrite. Off for
  /// rewrites whose benefit shows only over a group of matches (one member of a packed Q/K/V
  /// projection adds a Split that the next members' rewrites pay back).
  bool gated = true;
};

/// The outcome of matching one pattern at one node.
struct MatchResult {
  bool applies = false;     ///< structure and every constraint matched
  std::optional<Miss> miss; ///< structure matched but a constraint failed (first failure)
  Match match;              ///< the captures of the applying match
};

/// Matches \p p at node \p root of \p g (claims from \p claims; null = everything claimed).
MatchResult match_pattern(const Pattern& p, const ir::Graph& g, ir::NodeId root,
                          const ir::ClaimSet* claims = nullptr);

/// Options of apply_patterns().
struct ApplyOptions {
  int max_sweeps = 16;                  ///< sweeps over the graph before giving up on a fixed point
  const ir::ClaimSet* claims = nullptr; ///< claims gating Pattern::emits; null = all claimed
  FusionReport* report = nullptr;       ///< where applied counts and misses go; null = nowhere
  /// The backend's IO fusion-benefit gate: a gated rewrite whose new nodes cost more than the
  /// nodes it removes (io_gate.hpp) is undone and reported as a not_profitable miss; null = none.
  const IoFusionGate* gate = nullptr;
};

/// Rewrites \p g with \p patterns to a fixed point and compacts it; \returns the number of
/// rewrites applied. Misses of the final sweep are recorded in the report. Throws Error naming
/// the pattern when a rewrite produces a node of the wrong type.
int apply_patterns(ir::Graph& g, std::span<const Pattern> patterns, const ApplyOptions& opts = {});

} // namespace rlx::fusion
