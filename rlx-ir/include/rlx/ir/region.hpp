// region.hpp: what an ElementwiseRegion's body may hold (the one rule the shape rule, the region
// pass and the backends' region kernels share), and the region's unfused form.
#pragma once

#include "rlx/ir/builder.hpp"
#include "rlx/ir/graph.hpp"

#include <span>
#include <string>
#include <vector>

namespace rlx::ir {

/// Whether node \p id of \p g may be an op of a region body: an elementwise or broadcast op
/// (ops.def's FusionKind) with no attributes, or Compare, Cast or Expand; no effects; not an op
/// that may fail at run time (kMayFail, or kMayFailInt on integer operands); a tensor result.
/// Leaves are not body ops (a body's Inputs are its operands; Constants may appear in a body but
/// never join one as ops). When it may not and \p why is given, \p why receives the reason.
bool is_region_body_op(const Graph& g, NodeId id, std::string* why = nullptr);

/// The ElementwiseRegion node's results as values of \p b's graph: \p node's body inlined with
/// its Inputs bound in order to \p operands (one value per body output, in order). The reference
/// semantics of the region, and its unfused form.
std::vector<NodeId> inline_region(Builder& b, const Node& node, std::span<const NodeId> operands);

} // namespace rlx::ir
