// vmap_internal.hpp: private entry points shared by the vmap walk and its rules.
#pragma once

#include "rlx/autodiff/vmap.hpp"

#include <vector>

namespace rlx::autodiff::detail {

/// Vectorises sub-graph \p body (Inputs only: If branches) whose Input i is batched at axis 0 when
/// \p batched[i], with batch size \p size; every output of the result is batched at axis 0.
ir::Graph vmap_body(const ir::Graph& body, const std::vector<bool>& batched, const ir::Dim& size);

/// \p s with the batch dim \p size in front (every part of a tuple type).
ir::Shape batched_type(const ir::Shape& s, const ir::Dim& size);

/// Moves axis \p from of \p x to position \p to (a Transpose; \p x itself when equal).
ir::NodeId move_axis(ir::Builder& b, ir::NodeId x, std::size_t from, std::size_t to);

} // namespace rlx::autodiff::detail
