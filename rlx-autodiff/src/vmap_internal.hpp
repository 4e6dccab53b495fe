// vmap_internal.hpp: private entry points shared by the vmap walk and its rules.
#pragma once

#include "rlx/autodiff/vmap.hpp"

#include <vector>

namespace rlx::autodiff::detail {

/// Vectorises sub-graph \p body (Inputs only: If branches, While cond / body) whose Input i is
/// batched at axis 0 when \p batched[i], with batch size \p size. Output i of the result is
/// batched at axis 0 when \p batched_outputs[i] (broadcast if need be; every output when empty),
/// else it must not depend on a batched Input (an internal error otherwise).
ir::Graph vmap_body(const ir::Graph& body, const std::vector<bool>& batched, const ir::Dim& size,
                    const std::vector<bool>& batched_outputs = {});

/// \p s with the batch dim \p size in front (every part of a tuple type).
ir::Shape batched_type(const ir::Shape& s, const ir::Dim& size);

/// Moves axis \p from of \p x to position \p to (a Transpose; \p x itself when equal).
ir::NodeId move_axis(ir::Builder& b, ir::NodeId x, std::size_t from, std::size_t to);

} // namespace rlx::autodiff::detail
