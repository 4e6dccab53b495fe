// decompose.hpp: every op's decompositions into other ops, and sub-graph inlining.
//
// A decomposition emits an op's definition (its doc in ops.def, its reference kernel) in terms of
// other ops. Legalisation (rlx-compile) replaces an op a backend does not claim by one; the
// lowering passes (If / While, DotGeneral) and fusion's `unfuse` (rlx-fusion) use them too. Each
// is tested against the reference interpreter (rlx-ir/tests/decompositions_test.cpp).
//
// Extending the table: a family of ops keeps its decompositions in
// src/decompose/<family>.cpp, which defines `add_<family>_decompositions(DecompositionTable&)`
// (declared in src/decompose/families.hpp); src/decompose/table.cpp calls each family once.
#pragma once

#include "rlx/ir/builder.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::ir {

/// Limits a decomposition honours (rlx-fusion's PassOptions carries one for the passes).
struct DecomposeOptions {
  /// While: an unrolled copy larger than this many nodes does not apply (an error naming the
  /// node and this limit) rather than a silent explosion of the graph.
  std::int64_t unroll_max_nodes = 1 << 20;
};

/// One decomposition: emits into \p b's graph nodes computing the value of node \p id from other
/// ops, and \returns the node holding it (same type as \p id). When it does not apply to this node
/// (a dtype it cannot express, sizes it cannot compute, effects it would duplicate), it sets
/// \p why, \returns an invalid id and may leave unused nodes behind (compact() removes them).
/// Implementations copy what they read from the node before emitting: emitting may reallocate the
/// node list.
using DecomposeFn = NodeId (*)(Builder& b, NodeId id, const DecomposeOptions& opts,
                               std::string& why);

/// The decomposition of an op with a tuple result (several results, read through `get`): emits
/// nodes computing each part and \returns them in part order (part i has the type of the node's
/// part i). When it does not apply it sets \p why and \returns an empty list.
using DecomposePartsFn = std::vector<NodeId> (*)(Builder& b, NodeId id,
                                                 const DecomposeOptions& opts, std::string& why);

/// A named decomposition ("gelu_by_erf"), for reports and tests. A single-result op's forms set
/// \p fn; a tuple-result op's forms set \p parts (a tuple value has no one-node replacement: its
/// `get` users are replaced by the parts, see replace_tuple_uses).
struct Decomposition {
  std::string_view name;
  DecomposeFn fn = nullptr;
  DecomposePartsFn parts = nullptr;
};

/// The decompositions of op \p k, preferred first (empty when there is none).
std::span<const Decomposition> decompositions(OpKind k);

/// \returns whether op \p k has at least one decomposition.
bool has_decomposition(OpKind k);

/// Emits the first decomposition of node \p id that applies and \returns its value; an invalid id
/// when none applies or the op has none, with \p why saying why (each form's reason, joined).
NodeId decompose(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why);

/// Emits the first decomposition of node \p id that applies and \returns one value per result: the
/// parts of a tuple-typed node (forms with `parts`), or the one value of any other node (forms
/// with `fn`). An empty list when none applies, with \p why saying why.
std::vector<NodeId> decompose_parts(Builder& b, NodeId id, const DecomposeOptions& opts,
                                    std::string& why);

/// Replaces every use of node \p id by its decomposition \p parts: for a tuple-typed \p id, each
/// `get` user by the part it reads (the tuple node is then dead); otherwise every use by
/// \p parts[0]. Throws Error when a user of a tuple is not a `get` or the part count differs.
/// The graph may need compact() afterwards (as after Graph::replace_all_uses).
void replace_tuple_uses(Graph& g, NodeId id, std::span<const NodeId> parts);

/// Copies sub-graph \p sub into the builder's graph with its Inputs bound, in list order, to
/// \p args (every value of a sub-graph is an input; a Param in it is an error naming \p what).
/// \returns the copies of \p sub's outputs, in order.
std::vector<NodeId> inline_subgraph(Builder& b, const Graph& sub, std::span<const NodeId> args,
                                    std::string_view what);

/// The first node of \p g (or of a sub-graph of one of its nodes, recursively) that can reject a
/// value at run time, by ops.def's flags: kMayFail ops, and kMayFailInt ops on integer operands.
/// \returns its description ("div %3 in sub-graph 'then'"), or an empty string when \p g is
/// total (evaluating it never fails, whatever its inputs).
std::string first_fallible(const Graph& g);

/// A Constant of static type \p type filled with \p v.
NodeId full_constant(Builder& b, const Shape& type, double v);

/// If -> Where(pred, then, else) with both branches inlined on the captures. Does not apply when
/// a branch can fail at run time or has effects (both branches run).
NodeId lower_if(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why);
/// While -> max_iterations guarded copies of cond and body. Does not apply when cond or body can
/// fail or has effects (they run after the loop stopped), or past
/// DecomposeOptions::unroll_max_nodes.
NodeId lower_while(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why);
/// DotGeneral -> Transpose / Reshape / MatMul.
NodeId lower_dot_general(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why);

} // namespace rlx::ir
