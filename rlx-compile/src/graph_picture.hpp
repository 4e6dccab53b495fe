// graph_picture.hpp: what a drawing of a graph shows, independent of the renderer (private).
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"

#include <string>
#include <vector>

namespace rlx::compile::detail {

/// One drawn node.
struct PictureNode {
  enum class Shape { box, ellipse, box3d };
  std::uint32_t id = 0;
  std::vector<std::string> lines; ///< label lines, plain text
  Shape shape = Shape::box;
  std::string fill = "#ffffff"; ///< "#rrggbb"
  bool compound = false;        ///< a compound kernel (bold, double border)
  bool view = false;            ///< aliases another buffer (dashed border)
};

/// One drawn edge.
struct PictureEdge {
  enum class Style { data, view, reuse };
  std::uint32_t from = 0, to = 0;
  Style style = Style::data;
  std::string label;
};

/// A graph ready to draw: a title, nodes in graph order and edges.
struct Picture {
  std::string title;
  std::vector<PictureNode> nodes;
  std::vector<PictureEdge> edges;
};

/// Builds the picture of \p g, annotated with \p plan when it is not null (see to_dot()).
Picture build_picture(const ir::Graph& g, const ir::MemoryPlan* plan);

} // namespace rlx::compile::detail
