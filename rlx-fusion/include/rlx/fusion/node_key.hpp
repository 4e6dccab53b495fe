// node_key.hpp: structural identity of a node (op, attributes, operands, type), the one hash that
// CSE and pattern memoisation share.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>

namespace rlx::fusion {

/// A structural hash of \p n: op kind, every attribute field (Constant values bytewise, sub-graphs
/// by Graph::hash), operand ids and the output type. The debug name is excluded.
std::uint64_t node_hash(const ir::Node& n);

/// Structural equality with the same scope as node_hash().
bool node_equal(const ir::Node& a, const ir::Node& b);

} // namespace rlx::fusion
