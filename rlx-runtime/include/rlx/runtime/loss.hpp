// loss.hpp: a scalar training loss appended to a model's graph, and the gradient graph of it
// (what `rlx grad` compiles; tests build the same graph to check it).
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/tensor.hpp"

#include <optional>
#include <string>

namespace rlx::runtime {

/// The losses `rlx grad` knows, each reduced like PyTorch's default (`reduction="mean"`).
enum class LossKind : std::uint8_t {
  sum,  ///< the sum of every element of the output
  mse,  ///< mean((output - target)^2) over every element (torch.nn.MSELoss)
  xent, ///< mean over rows of SoftmaxCrossEntropy over the output's last axis
        ///< (torch.nn.CrossEntropyLoss); labels hold one class index per row
};

/// Parses "sum" | "mse" | "xent"; throws rlx::Error naming the choices.
LossKind parse_loss(const std::string& name);

/// \p forward (static shapes) with its output 0 replaced by the scalar loss of \p kind: \p target
/// is the mse target (the output's shape; a float tensor, converted to the output's dtype) or the
/// xent labels (integer, the output's shape without its last axis, every value in [0, classes)),
/// unused for sum. The other outputs are dropped. Throws rlx::Error with one line on a symbolic
/// or non-float output, a missing target, a wrong shape or dtype, or a label out of range.
ir::Graph with_loss(const ir::Graph& forward, LossKind kind,
                    const std::optional<ir::Tensor>& target = std::nullopt);

/// The gradient graph `rlx grad` runs: grad_with_loss of with_loss(\p forward, ...) with respect
/// to every float Param, in the forward's param order; a Param no gradient reaches gets zeros
/// (torch reports None there). Outputs: [loss, one gradient per float Param]. Throws rlx::Error
/// when the model has no float Param.
ir::Graph gradient_graph(const ir::Graph& forward, LossKind kind,
                         const std::optional<ir::Tensor>& target = std::nullopt);

} // namespace rlx::runtime
