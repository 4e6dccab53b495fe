// text.hpp: the text form of a graph, which prints and parses back to an equal graph.
#pragma once

#include "rlx/ir/graph.hpp"

#include <string>
#include <string_view>

namespace rlx::ir {

/// Prints \p g in the rlx text form:
///
///     graph @name {
///       %0 = input[name="x", shape=[batch, 4] f32] : [batch, 4] f32
///       %1 = relu(%0) : [batch, 4] f32  # optional node label
///       return %1
///     }
std::string print(const Graph& g);

/// Parses the text form (as print() writes it). Throws ParseError with line:column and the reason
/// on malformed input; the result is verified.
Graph parse(std::string_view text);

} // namespace rlx::ir
