// json.hpp: JSON save / load of graphs. Weights are not in the graph: Constants are inline,
// Params are referenced by name.
//
// The document:
//
//     {"format": "rlx.graph", "version": 1, "name": "main",
//      "nodes": [{"op": "input", "attrs": {"name": "x", "shape": {"dims": ["batch", 4],
//                                                                  "dtype": "f32"}},
//                 "shape": {"dims": ["batch", 4], "dtype": "f32"}},
//                {"op": "relu", "inputs": [0], "shape": {...}, "label": "act"}],
//      "outputs": [1]}
//
// - Nodes are listed in order; "inputs" and "outputs" hold node indices, and an input must name an
//   earlier node. "inputs", "attrs" and "label" (Node::name) may be absent; "shape" is checked
//   against the inferred type when present.
// - "attrs" holds every field of the op's attribute struct by its RLX_ATTRS name (the writer is
//   generic over the field lists); a missing field keeps its default, an unknown one is an error.
//   Values: bools, integers and strings as such; doubles as numbers, or "nan", "-nan", "inf",
//   "-inf"; dtypes and named enums as their names; a dim as an integer or a symbol string; a shape
//   as {"dims", "dtype"}; lists as arrays; an absent optional or sub-graph as null; a sub-graph as
//   a nested {"name", "nodes", "outputs"} object.
// - A constant is {"shape": ..., "data": [...]} with the elements in row-major order (floats as
//   numbers or the strings above, integers, bools), or {"shape": ..., "hex": "..."}, its raw bytes
//   in memory order, when decimals cannot reproduce it bit-exactly (NaN payloads, odd bool bytes).
// - Errors name the JSON path of the offending value: "nodes[3].attrs.perm: expected array of
//   integers, got string".
#pragma once

#include "rlx/ir/graph.hpp"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace rlx::ir {

/// \returns the JSON document of \p g (format and version included).
nlohmann::json to_json(const Graph& g);
/// Rebuilds a graph from its JSON document; throws ParseError naming the JSON path on bad input.
/// The result is verified.
Graph graph_from_json(const nlohmann::json& j);
/// to_json(g) serialised to text. Throws Error when a name or label is not valid UTF-8.
std::string save_json(const Graph& g);
/// Parses JSON text; throws ParseError on malformed JSON or a malformed graph.
Graph load_json(std::string_view text);

} // namespace rlx::ir
