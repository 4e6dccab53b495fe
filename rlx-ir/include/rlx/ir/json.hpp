// json.hpp: JSON save / load of graphs. Weights are not in the graph: Constants are inline,
// Params are referenced by name.
#pragma once

#include "rlx/ir/graph.hpp"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace rlx::ir {

/// \returns the JSON document of \p g.
nlohmann::json to_json(const Graph& g);
/// Rebuilds a graph from its JSON document; throws ParseError naming the JSON path on bad input.
Graph graph_from_json(const nlohmann::json& j);
/// to_json(g) serialised to text.
std::string save_json(const Graph& g);
/// Parses JSON text; throws ParseError on malformed JSON or a malformed graph.
Graph load_json(std::string_view text);

} // namespace rlx::ir
