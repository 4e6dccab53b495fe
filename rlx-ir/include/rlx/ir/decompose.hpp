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

/// The decomposition of an op with several results (a tuple type, e.g. layer_norm_grad): emits
/// one value per part, in part order (each of that part's type), and \returns them; an empty list
/// when it does not apply (with \p why set), like DecomposeFn.
using DecomposePartsFn = std::vector<NodeId> (*)(Builder& b, NodeId id,
                                                 const DecomposeOptions& opts, std::string& why);

/// A named decomposition ("gelu_by_erf"), for reports and tests. Exactly one of \p fn (an op with
/// one result) and \p parts (an op with a tuple result) is set; emit_decomposition() calls either.
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
/// when none applies or the op has none, with \p why saying why (each form's reason, joined). A
/// tuple-typed op's forms (Decomposition::parts) never apply here: use decompose_values().
NodeId decompose(Builder& b, NodeId id, const DecomposeOptions& opts, std::string& why);

/// Emits form \p form of node \p id: \returns its values, one for a single-result op, one per part
/// for a tuple-typed op; an empty list when it does not apply (\p why says why). A ShapeError the
/// form raises is caught and becomes \p why.
std::vector<NodeId> emit_decomposition(const Decomposition& form, Builder& b, NodeId id,
                                       const DecomposeOptions& opts, std::string& why);

/// Like decompose() for any node, tuple-typed ones included: the values of the first form that
/// applies (see emit_decomposition); empty, with \p why, when none does.
std::vector<NodeId> decompose_values(Builder& b, NodeId id, const DecomposeOptions& opts,
                                     std::string& why);

/// Makes node \p id's users read \p values (from emit_decomposition) instead: for a
/// single-result node every use, for a tuple-typed node every use of each `get` of it (part i ->
/// values[i]). The node and its gets are left without users (compact() removes them).
void replace_by_values(Graph& g, NodeId id, std::span<const NodeId> values);

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
