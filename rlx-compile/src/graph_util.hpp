// graph_util.hpp: small graph helpers shared by the passes and decompositions (private).
#pragma once

#include "rlx/ir/builder.hpp"
#include "rlx/ir/graph.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::compile::detail {

/// Copies sub-graph \p sub into the builder's graph with its Inputs bound, in list order, to
/// \p args (every value of a sub-graph is an input; a Param in it is an error naming \p what).
/// \returns the copies of \p sub's outputs, in order.
std::vector<ir::NodeId> inline_subgraph(ir::Builder& b, const ir::Graph& sub,
                                        std::span<const ir::NodeId> args, std::string_view what);

/// The first node of \p g (or of a sub-graph of one of its nodes, recursively) that can reject a
/// value at run time, by ops.def's flags: kMayFail ops, and kMayFailInt ops on integer operands.
/// \returns its description ("div %3 in sub-graph 'then'"), or an empty string when \p g is
/// total (evaluating it never fails, whatever its inputs).
std::string first_fallible(const ir::Graph& g);

/// A Constant of static type \p type filled with \p v.
ir::NodeId full_constant(ir::Builder& b, const ir::Shape& type, double v);

/// Graph::compact(), reporting whether any node moved or was removed.
bool compact_changed(ir::Graph& g);

/// Rebuilds \p g without the nodes flagged in \p drop (indexed by NodeId::v), which must have no
/// uses; every other node keeps its order, attributes and type.
void erase_unused(ir::Graph& g, const std::vector<char>& drop);

} // namespace rlx::compile::detail
