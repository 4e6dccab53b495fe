// verify.hpp: the IR verifier.
#pragma once

#include "rlx/ir/graph.hpp"

namespace rlx::ir {

/// What the verifier accepts beyond the core invariants.
struct VerifyOptions {
  bool allow_hir = true; ///< false at MIR / LIR stage: HIR block ops are an error
};

/// Checks every invariant of \p g: edges in range, topological order, arity, attribute type and
/// validity, leaf names unique per kind, every shape equal to what the op's shape rule re-derives,
/// outputs in range, and sub-graphs recursively. Throws VerifyError naming the node and the rule.
void verify(const Graph& g, const VerifyOptions& opts = {});

} // namespace rlx::ir
