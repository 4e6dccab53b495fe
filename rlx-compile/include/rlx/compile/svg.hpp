// svg.hpp: pictures of a graph and its memory plan: Graphviz DOT, and SVG (via `dot` or built in).
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"

#include <string>

namespace rlx::compile {

/// Which renderer to_svg() uses.
enum class SvgEngine {
  automatic, ///< Graphviz `dot` when it is on PATH, else the built-in layered layout
  graphviz,  ///< Graphviz `dot`; an Error when it is not installed or fails
  builtin,   ///< the built-in layered layout (no external program)
};

/// \returns the graph in Graphviz DOT. Every node is drawn with its id, op, label and type; leaves
/// are ellipses, HIR blocks 3-D boxes and compound kernels (ops of fusion kind opaque that are not
/// leaves: matmul, attention, norms, fused ops) bold double boxes; pure views (is_pure_view) are
/// dashed, and so are the edges into them. With \p plan, every node also shows its storage and
/// arena offset, temporaries are coloured by arena offset (nodes sharing a buffer share a colour),
/// a dotted "reuses" edge runs to a temporary from the previous one placed on its bytes, view
/// edges carry their byte offset and a view of a view is linked to its root as well. Throws
/// Error when \p plan does not belong to \p g.
std::string to_dot(const ir::Graph& g, const ir::MemoryPlan* plan = nullptr);

/// \returns the picture of to_dot() as an SVG document. With SvgEngine::automatic it is rendered
/// by Graphviz `dot` when installed and otherwise by a built-in layered layout (nodes in rows by
/// depth, edges as lines, the same colours and dashes). Throws Error when the chosen renderer
/// cannot produce it; never returns an empty or partial document.
std::string to_svg(const ir::Graph& g, const ir::MemoryPlan* plan = nullptr,
                   SvgEngine engine = SvgEngine::automatic);

/// \returns true when the Graphviz `dot` program is on PATH.
bool graphviz_available();

} // namespace rlx::compile
