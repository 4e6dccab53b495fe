// axis_lanes.hpp (private): a tensor viewed as [outer, axis, inner] around one axis, the layout
// the softmax kernels and their backward kernels walk.
#pragma once

#include "lower.hpp"

#include <cstdint>

namespace rlx::cpu {

/// Sizes of the [outer, axis, inner] view of operand 0 of a node with AxisAttrs.
struct AxisLanes {
  std::int64_t outer = 1, axis = 1, inner = 1;
};

/// The [outer, axis, inner] view of \p n's operand 0 around its AxisAttrs axis (\p what names the
/// op in an axis error).
inline AxisLanes axis_lanes(const NodeView& n, const char* what) {
  auto s = n.in(0).sizes();
  auto ax = static_cast<std::size_t>(
      ir::normalize_axis(n.node().attr<ir::AxisAttrs>().axis, s.size(), what));
  AxisLanes l;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i < ax)
      l.outer *= s[i];
    else if (i == ax)
      l.axis = s[i];
    else
      l.inner *= s[i];
  }
  return l;
}

} // namespace rlx::cpu
