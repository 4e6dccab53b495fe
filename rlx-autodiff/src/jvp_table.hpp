// jvp_table.hpp: private declarations of the JVP table (rules in jvp_rules.cpp).
#pragma once

#include "rlx/autodiff/jvp.hpp"

namespace rlx::autodiff::detail {

/// The JVP of sub-graph \p body (one output, Inputs only) with respect to all its Inputs: a graph
/// with \p body's Inputs then one tangent Input per Input (same order), whose one output is the
/// output's tangent. Used by If's rule.
ir::Graph jvp_body(const ir::Graph& body);

} // namespace rlx::autodiff::detail
