// const_fold_tuple.hpp (private): constant folding of tuple-typed nodes (const_fold_tuple.cpp).
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/tensor.hpp"

#include <cstdint>
#include <span>

namespace rlx::compile::detail {

/// Evaluates tuple-typed node \p id on its constant operand values \p args and replaces every Get
/// of a part with at most \p max_elements elements (or no more than \p operand_elements) by a
/// Constant. A node the interpreter refuses is left alone. \returns whether a Get was replaced.
bool fold_tuple(ir::Graph& g, ir::NodeId id, std::span<const ir::Tensor> args,
                std::int64_t operand_elements, std::int64_t max_elements);

} // namespace rlx::compile::detail
